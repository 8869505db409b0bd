package driver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// pluginEnv, when set, makes the test binary a plugin: it runs driver.Serve
// as a provider's main would, so TestServe can run it as a process and
// signal it.
const pluginEnv = "MILLWRIGHT_TEST_RUN_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(pluginEnv) != "" {
		if err := driver.Serve(newFake(os.Getenv(pluginEnv))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startPlugin runs this test binary as a plugin process with args and env.
func startPlugin(t *testing.T, name string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), pluginEnv+"="+name), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return cmd, &stderr, exited
}

// TestServe runs a plugin the way a provider's main does, with the endpoint
// from the flag or the environment, and stops it with SIGTERM: it serves
// until then, exits 0, and leaves no socket behind.
func TestServe(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(endpoint string) []string
		args func(endpoint string) []string
	}{
		{"flag", func(string) []string { return []string{driver.EndpointEnv + "="} },
			func(e string) []string { return []string{"--endpoint=" + e} }},
		{"environment", func(e string) []string { return []string{driver.EndpointEnv + "=" + e} },
			func(string) []string { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := socketPath(t)
			endpoint := "unix://" + path
			cmd, stderr, exited := startPlugin(t, "by-"+tc.name, tc.env(endpoint), tc.args(endpoint)...)
			c := dial(t, path)
			var info *driver.GetPluginInfoResponse
			err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				var err error
				info, err = c.GetPluginInfo(ctx, nil)
				return err == nil, nil
			})
			if err != nil || info.Name != "by-"+tc.name {
				t.Fatalf("the plugin never answered GetPluginInfo (%v, %v); its stderr:\n%s", info, err, stderr)
			}

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := waitFor(t, exited, "the plugin's exit after SIGTERM"); err != nil {
				t.Errorf("the plugin exited with %v after SIGTERM, want 0; its stderr:\n%s", err, stderr)
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the socket is still there after the plugin stopped: %v", err)
			}
		})
	}
}

// TestServeWithoutEndpoint: a plugin started with no endpoint says how to
// give one and exits non-zero.
func TestServeWithoutEndpoint(t *testing.T) {
	_, stderr, exited := startPlugin(t, "lost", []string{driver.EndpointEnv + "="})
	err := waitFor(t, exited, "the plugin's exit")
	if err == nil || !strings.Contains(stderr.String(), "--endpoint") || !strings.Contains(stderr.String(), driver.EndpointEnv) {
		t.Errorf("a plugin without endpoint exited with %v and said %q; want a failure naming --endpoint and %s", err, stderr, driver.EndpointEnv)
	}
}

// TestServeRemovesAStaleSocket: a socket file left by a plugin that died is
// replaced, so the plugin restarts without anyone cleaning up.
func TestServeRemovesAStaleSocket(t *testing.T) {
	path := socketPath(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false) // die without cleaning up
	l.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("no stale socket to test with: %v", err)
	}
	servePlugin(t, path, newFake("fresh"))
	c := dial(t, path, driver.WithReadyWait(30*time.Second))
	if info, err := c.GetPluginInfo(context.Background(), nil); err != nil || info.Name != "fresh" {
		t.Errorf("GetPluginInfo on a formerly stale socket = %v, %v", info, err)
	}
}

// TestServeLeavesOtherFilesAlone: a live plugin's socket and a path that is
// not a socket are reported, not removed.
func TestServeLeavesOtherFilesAlone(t *testing.T) {
	live := socketPath(t)
	l, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := driver.ServeEndpoint(context.Background(), "unix://"+live, newFake("x")); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("ServeEndpoint on a live socket = %v, want an error saying it is in use", err)
	}

	file := socketPath(t)
	if err := os.WriteFile(file, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := driver.ServeEndpoint(context.Background(), "unix://"+file, newFake("x")); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("ServeEndpoint on a regular file = %v, want an error saying it is not a socket", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "precious" {
		t.Errorf("the regular file was touched: %q, %v", b, err)
	}
}

// TestServeStopsGracefully: a call in flight when the plugin is told to stop
// completes before ServeEndpoint returns.
func TestServeStopsGracefully(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	entered, release := make(chan struct{}), make(chan struct{})
	fake.setHandle(func(context.Context, driver.Method, any) (any, error) {
		close(entered)
		<-release
		return &driver.DeleteMachineResponse{LastKnownState: "gone"}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- driver.ServeEndpoint(ctx, "unix://"+path, fake) }()
	c := dial(t, path, driver.WithReadyWait(30*time.Second))

	type answer struct {
		resp *driver.DeleteMachineResponse
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := c.DeleteMachine(context.Background(), &driver.DeleteMachineRequest{Machine: testMachine("m")})
		answered <- answer{resp, err}
	}()
	waitFor(t, entered, "the call reaching the driver")
	cancel()
	// The stop has begun once the listener is closed, which removes the socket.
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Lstat(path)
		return errors.Is(err, os.ErrNotExist), nil
	})
	if err != nil {
		t.Fatalf("the plugin did not close its listener after being told to stop: %v", err)
	}
	select {
	case err := <-served:
		t.Fatalf("ServeEndpoint returned (%v) with a call in flight", err)
	case a := <-answered:
		t.Fatalf("the call ended (%v, %v) before the driver answered", a.resp, a.err)
	default:
	}
	close(release)
	if a := waitFor(t, answered, "the answer"); a.err != nil || a.resp.LastKnownState != "gone" {
		t.Errorf("the call in flight during the stop = %v, %v; want it to complete", a.resp, a.err)
	}
	if err := waitFor(t, served, "ServeEndpoint's return"); err != nil {
		t.Errorf("ServeEndpoint = %v", err)
	}
}

// TestServeEndsLongPolls: a ReceiveEvents long poll in flight when the
// plugin is told to stop ends with what the driver has (nothing), not
// with an error once the stop's grace period is up: the poll would
// otherwise hold the graceful stop for its whole wait, and a service
// manager kills a plugin that does not exit in time.
func TestServeEndsLongPolls(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	entered := make(chan struct{})
	fake.setHandle(func(ctx context.Context, m driver.Method, _ any) (any, error) {
		close(entered)
		<-ctx.Done() // a driver waiting for an event that does not come
		return nil, driver.Errorf(driver.DeadlineExceeded, "waiting for events: %v", ctx.Err())
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- driver.ServeEndpoint(ctx, "unix://"+path, fake) }()
	c := dial(t, path, driver.WithReadyWait(30*time.Second))

	type answer struct {
		resp *driver.ReceiveEventsResponse
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := c.ReceiveEvents(context.Background(), &driver.ReceiveEventsRequest{Acknowledged: []string{"ev-1"}, Wait: time.Hour})
		answered <- answer{resp, err}
	}()
	waitFor(t, entered, "the poll reaching the driver")
	cancel()
	if a := waitFor(t, answered, "the poll's answer"); a.err != nil || len(a.resp.Events) != 0 {
		t.Errorf("the poll in flight during the stop = %v, %v; want no events and no error", a.resp, a.err)
	}
	if err := waitFor(t, served, "ServeEndpoint's return"); err != nil {
		t.Errorf("ServeEndpoint = %v", err)
	}
}
