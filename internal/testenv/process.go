package testenv

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/logtail"
)

// Process is a program started for a test — a control-plane component or
// one of Millwright's binaries — by internal/localcluster's launcher: its
// own process group, killed if the test binary dies, its output in a log
// file.
type Process struct {
	// Name names the process in messages.
	Name string
	// Log is the path of the file receiving the process's stdout and stderr.
	Log string

	p        *localcluster.Process
	stopOnce sync.Once
}

// startProcess starts path with args, its output appended to log, and env
// added to the test's environment.
func startProcess(path, log string, args []string, env ...string) (*Process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s not found: run `make tools` first", path)
	}
	name := filepath.Base(path)
	p, err := localcluster.StartProcess(name, path, args, env, log)
	if err != nil {
		return nil, err
	}
	return &Process{Name: name, Log: log, p: p}, nil
}

// StartProcess starts bin with args for the test t. When the test ends the
// process group is killed and, if the test failed, the end of the log is
// printed: a failed test leaves nothing running and shows why.
func StartProcess(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	p, err := startProcess(bin, filepath.Join(t.TempDir(), name+".log"), args)
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p.Name = name
	t.Cleanup(func() {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.p.Done()
		if t.Failed() {
			t.Logf("--- %s log (last 40 lines) ---\n%s", name, p.LogTail(40))
		}
	})
	return p
}

// Pid is the process's ID, also its process group's.
func (p *Process) Pid() int { return p.p.Pid() }

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) { return p.p.Exited() }

// HasExited reports whether the process has exited.
func (p *Process) HasExited() bool {
	exited, _ := p.Exited()
	return exited
}

// Signal sends sig to the process, failing the test if it cannot.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.p.Signal(sig); err != nil {
		t.Fatalf("signalling %s: %v", p.Name, err)
	}
}

// Kill kills the process at once (SIGKILL), as a crash would.
func (p *Process) Kill() error { return p.p.Signal(syscall.SIGKILL) }

// WaitExit waits up to bound for the process to exit and returns its exit
// code (-1 for a death by signal), failing the test if it does not exit.
func (p *Process) WaitExit(t testing.TB, bound time.Duration) int {
	t.Helper()
	select {
	case <-p.p.Done():
		return p.p.ExitCode()
	case <-time.After(bound):
		t.Fatalf("%s did not exit within %s", p.Name, bound)
		return 0
	}
}

// Stop terminates the process: SIGTERM, then SIGKILL if it has not exited
// after ten seconds. It returns once the process is gone; calling it again
// does nothing.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { _ = p.p.Stop(10 * time.Second) })
	return nil
}

// LogTail returns the last n lines of the process's log, for error messages.
func (p *Process) LogTail(n int) string { return logtail.Tail(p.Log, n) }

// Grep returns the log lines containing s, case-insensitively.
func (p *Process) Grep(s string) []string {
	f, err := os.Open(p.Log)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(strings.ToLower(sc.Text()), strings.ToLower(s)) {
			out = append(out, sc.Text())
		}
	}
	return out
}
