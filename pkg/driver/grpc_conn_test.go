package driver_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// blockUntilCancelled makes every call of fake wait for its context and
// report the context's error on the returned channel.
func blockUntilCancelled(t *testing.T, fake *fakeDriver) <-chan error {
	seen := make(chan error, 1)
	testDone := make(chan struct{})
	t.Cleanup(func() { close(testDone) })
	fake.setHandle(func(ctx context.Context, _ driver.Method, _ any) (any, error) {
		select {
		case <-ctx.Done():
			seen <- ctx.Err()
			return nil, ctx.Err()
		case <-testDone:
			return nil, driver.Errorf(driver.Aborted, "test over")
		}
	})
	return seen
}

// waitFor returns what ch yields, failing the test after a bound.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not happen within 30s", what)
	}
	panic("unreachable")
}

// TestCallerDeadlineReachesThePlugin: a caller deadline shorter than the
// driver's work ends the call with DeadlineExceeded, and the driver's
// context is cancelled so it can stop working.
func TestCallerDeadlineReachesThePlugin(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	servePlugin(t, path, fake)
	c := dial(t, path, driver.WithCallTimeout(time.Hour))
	if _, err := c.GetPluginInfo(context.Background(), nil); err != nil { // connected, so the deadline is the driver's alone
		t.Fatal(err)
	}
	seen := blockUntilCancelled(t, fake)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: testMachine("m")})
	if driver.CodeOf(err) != driver.DeadlineExceeded {
		t.Errorf("call past its deadline = %v, want DeadlineExceeded", err)
	}
	if err := waitFor(t, seen, "cancellation of the driver's context"); err == nil {
		t.Error("the driver's context ended without an error")
	}
}

// TestCallTimeoutAppliesOnlyWithoutAnEarlierDeadline checks the deadline the
// driver sees: the client's call timeout when the caller has none or a
// later one, the caller's own when it is earlier.
func TestCallTimeoutAppliesOnlyWithoutAnEarlierDeadline(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	servePlugin(t, path, fake)
	deadlines := make(chan time.Duration, 1)
	fake.setHandle(func(ctx context.Context, _ driver.Method, _ any) (any, error) {
		d, ok := ctx.Deadline()
		if !ok {
			deadlines <- -1
		} else {
			deadlines <- time.Until(d)
		}
		return nil, nil
	})
	for _, tc := range []struct {
		name            string
		callTimeout     time.Duration
		callerDeadline  time.Duration // 0: none
		atLeast, atMost time.Duration
	}{
		{"no caller deadline", time.Hour, 0, 50 * time.Minute, time.Hour},
		{"earlier caller deadline", time.Hour, 30 * time.Second, time.Second, 30 * time.Second},
		{"later caller deadline", 20 * time.Second, time.Hour, time.Second, 20 * time.Second},
	} {
		c := dial(t, path, driver.WithCallTimeout(tc.callTimeout))
		ctx := context.Background()
		if tc.callerDeadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.callerDeadline)
			defer cancel()
		}
		if _, err := c.UpdateMachine(ctx, &driver.UpdateMachineRequest{}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := <-deadlines; got < tc.atLeast || got > tc.atMost {
			t.Errorf("%s: the driver had %v left, want between %v and %v", tc.name, got, tc.atLeast, tc.atMost)
		}
	}

	// And the call timeout does end a call.
	c := dial(t, path, driver.WithCallTimeout(200*time.Millisecond))
	seen := blockUntilCancelled(t, fake)
	result := make(chan error, 1)
	go func() {
		_, err := c.ListMachines(context.Background(), &driver.ListMachinesRequest{})
		result <- err
	}()
	if err := waitFor(t, result, "the end of a call past the call timeout"); driver.CodeOf(err) != driver.DeadlineExceeded {
		t.Errorf("call past the call timeout = %v, want DeadlineExceeded", err)
	}
	waitFor(t, seen, "cancellation of the driver's context")
}

// TestClientReconnectsAfterPluginRestart stops the plugin and starts a new
// one on the same socket: while it is down, calls fail fast with
// Unavailable (none hangs until its deadline), and once it is back the same
// client reaches it again.
func TestClientReconnectsAfterPluginRestart(t *testing.T) {
	path := socketPath(t)
	stop := servePlugin(t, path, newFake("first"))
	c := dial(t, path, driver.WithReadyWait(200*time.Millisecond))
	ctx := context.Background()
	if info, err := c.GetPluginInfo(ctx, nil); err != nil || info.Name != "first" {
		t.Fatalf("GetPluginInfo = %v, %v", info, err)
	}

	stop()
	down, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := c.GetPluginInfo(down, nil); driver.CodeOf(err) != driver.Unavailable {
		t.Errorf("GetPluginInfo with the plugin down = %v, want Unavailable before the 20s deadline", err)
	}

	servePlugin(t, path, newFake("second"))
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		info, err := c.GetPluginInfo(ctx, nil)
		if err != nil {
			last = err
			return false, nil
		}
		return info.Name == "second", nil
	})
	if err != nil {
		t.Fatalf("the client never reached the restarted plugin: %v (last error: %v)", err, last)
	}
}

// TestCallRidesOutAPluginStart: a call that finds the plugin not yet
// serving waits for it (up to the ready wait) instead of failing. To know
// the call is under way before the plugin starts, a bare listener takes the
// client's first connection and drops it, as a plugin dying at start would.
func TestCallRidesOutAPluginStart(t *testing.T) {
	path := socketPath(t)
	raw, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		if conn, err := raw.Accept(); err == nil {
			accepted <- conn
		}
	}()
	c := dial(t, path, driver.WithReadyWait(30*time.Second))
	result := make(chan error, 1)
	go func() {
		_, err := c.GetPluginInfo(context.Background(), nil)
		result <- err
	}()
	waitFor(t, accepted, "the client's first connection").Close()
	raw.Close() // removes the socket file

	servePlugin(t, path, newFake("late"))
	if err := waitFor(t, result, "the call"); err != nil {
		t.Errorf("a call made while the plugin was starting = %v, want success", err)
	}
}

// TestTCPEndpoints serves on TCP with NewGRPCServer and reaches it in both
// spellings of a TCP endpoint.
func TestTCPEndpoints(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := driver.NewGRPCServer(newFake("tcp"), grpc.MaxConcurrentStreams(8))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	for _, endpoint := range []string{"tcp://" + lis.Addr().String(), lis.Addr().String()} {
		c, err := driver.Dial(endpoint)
		if err != nil {
			t.Fatalf("Dial(%q): %v", endpoint, err)
		}
		info, err := c.GetPluginInfo(context.Background(), nil)
		if err != nil || info.Name != "tcp" {
			t.Errorf("over %s: GetPluginInfo = %v, %v", endpoint, info, err)
		}
		c.Close()
	}
}

// TestBadEndpointsAreRefused: a malformed endpoint is an error at Dial and
// at ServeEndpoint that names the accepted forms, not a call that fails later.
func TestBadEndpointsAreRefused(t *testing.T) {
	for _, endpoint := range []string{
		"", "http://127.0.0.1:80", "unix://relative/driver.sock", "unix:/one-slash.sock",
		"localhost", "tcp://localhost", "tcp://localhost:http", "127.0.0.1:70000", "/var/run/driver.sock",
	} {
		c, err := driver.Dial(endpoint)
		if err == nil {
			c.Close()
			t.Errorf("Dial(%q) succeeded", endpoint)
			continue
		}
		if !strings.Contains(err.Error(), "unix:///") || !strings.Contains(err.Error(), "host:port") {
			t.Errorf("Dial(%q) = %v; want the accepted forms named", endpoint, err)
		}
		if err := driver.ServeEndpoint(context.Background(), endpoint, newFake("x")); err == nil {
			t.Errorf("ServeEndpoint(%q) succeeded", endpoint)
		}
	}
	if _, err := driver.Dial("tcp://127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "port 0") {
		t.Errorf("Dial of port 0 = %v, want an error about port 0", err)
	}
	for _, endpoint := range []string{"unix:///run/millwright/driver.sock", "tcp://127.0.0.1:5000", "localhost:5000", "[::1]:5000"} {
		c, err := driver.Dial(endpoint)
		if err != nil {
			t.Errorf("Dial(%q) = %v, want a client", endpoint, err)
			continue
		}
		c.Close()
	}
}
