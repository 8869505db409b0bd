package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// runMainEnv makes the test binary run the command's main instead of the
// tests, so the tests can run the real command as a child process and
// signal it.
const runMainEnv = "MILLWRIGHT_LOCALCLUSTER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestUpStopsOnInterrupt runs `up`, uses the cluster with the real kubectl
// through the printed kubeconfig, then sends SIGINT (Ctrl-C) and expects a
// clean exit with no component left running.
func TestUpStopsOnInterrupt(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	up := startUp(t, "--dir", dir, "--kubeconfig", kubeconfig)
	if !strings.Contains(up.stdout.String(), "export KUBECONFIG="+kubeconfig) {
		t.Errorf("output does not say how to use the kubeconfig:\n%s", up.stdout)
	}
	out, err := exec.Command(filepath.Join(binDir(t), "kubectl"), "--kubeconfig", kubeconfig, "get", "--raw", "/readyz").CombinedOutput()
	if err != nil || string(out) != "ok" {
		t.Errorf("kubectl get --raw /readyz: %v: %s", err, out)
	}
	if err := up.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := up.wait(t, 60*time.Second); err != nil {
		t.Errorf("up exited with %v after SIGINT; stderr:\n%s", err, up.stderr)
	}
	if !strings.Contains(up.stderr.String(), "stopped.") {
		t.Errorf("up did not report stopping; stderr:\n%s", up.stderr)
	}
	if left := testenv.ProcessesUsing(t, dir); len(left) > 0 {
		t.Errorf("processes left after SIGINT: %v", left)
	}
}

// TestUpKilledTakesItsComponentsAlong: even `kill -9` of the command, which
// it cannot handle, leaves no component running (parent-death signal).
func TestUpKilledTakesItsComponentsAlong(t *testing.T) {
	dir := t.TempDir()
	up := startUp(t, "--dir", dir)
	if running := testenv.ProcessesUsing(t, dir); len(running) < 5 {
		t.Fatalf("want the five components running, found %v", running)
	}
	if err := up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = up.wait(t, 10*time.Second)
	var left []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		left = testenv.ProcessesUsing(t, dir)
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("components still running after the command was killed: %v", left)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, `expected the command "up"`},
		{[]string{"down"}, `expected the command "up"`},
		{[]string{"up", "extra"}, "unexpected arguments"},
		{[]string{"up", "--bin-dir", t.TempDir()}, "run `make tools`"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(tc.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"--help"}, &stdout, &stderr); err != nil || !strings.Contains(stderr.String(), "-kubeconfig") {
		t.Errorf("--help: %v; usage:\n%s", err, stderr.String())
	}
}

// upProcess is `up` running as a child process.
type upProcess struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{} // closed once it has exited
	err            error         // how; set before done closes
}

// startUp runs `up args...` as a child process and returns once it has
// printed that the cluster is up. The process is killed at the end of the
// test if still running.
func startUp(t *testing.T, args ...string) *upProcess {
	t.Helper()
	p := &upProcess{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], append([]string{"up"}, args...)...)
	p.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("up exited early: %v", p.err)
		default:
		}
		return strings.Contains(p.stdout.String(), "Press Ctrl-C to stop."), nil
	})
	if err != nil {
		t.Fatalf("up did not start: %v\nstdout:\n%s\nstderr:\n%s", err, p.stdout, p.stderr)
	}
	return p
}

// wait waits, at most timeout, for the process to exit and returns how it
// did.
func (p *upProcess) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("up did not exit within %s", timeout)
		return nil
	}
}

// syncBuffer is a bytes.Buffer the command's output copier writes while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var _ io.Writer = (*syncBuffer)(nil)

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// binDir is the repository's bin/, two levels above this package.
func binDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
