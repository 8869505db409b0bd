package manager_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// proc is one program under test, in its own process group, its output in
// a file that the test prints when it fails.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // the exit status; set before done closes
}

// start starts bin with args. Cleanup kills the process group, so a failed
// test leaves nothing running.
func start(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	log := filepath.Join(t.TempDir(), name+".log")
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("--- %s log (last 40 lines) ---\n%s", name, p.tail(40))
		}
	})
	return p
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling %s: %v", p.name, err)
	}
}

// waitExit waits up to bound for the process to exit and returns its exit
// code (-1 for a death by signal).
func (p *proc) waitExit(t *testing.T, bound time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(bound):
		t.Fatalf("%s did not exit within %s", p.name, bound)
		return 0
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) tail(n int) string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// eventually polls cond every 100ms until it holds, fails the test after
// bound, and returns how long it took.
func eventually(t *testing.T, bound time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	began := time.Now()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, bound, true,
		func(context.Context) (bool, error) {
			ok, err := cond()
			last = err
			return ok, nil
		})
	if err != nil {
		t.Fatalf("waiting %s for %s: %v (last error: %v)", bound, what, err, last)
	}
	return time.Since(began)
}

// get fetches url and returns its status and body.
func get(url string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// metric returns the value of the sample of name whose labels include
// every label given ("k=\"v\"" pairs), from a Prometheus text exposition.
func metric(exposition, name string, labels ...string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(exposition))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		matched := true
		for _, l := range labels {
			matched = matched && strings.Contains(line, l)
		}
		if !matched {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			return v, true
		}
	}
	return 0, false
}

// label formats one label matcher for metric.
func label(k, v string) string { return fmt.Sprintf("%s=%q", k, v) }
