package manager

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// runCommand runs millwright-manager with args and returns its error,
// failing the test if it does not return within bound.
func runCommand(t *testing.T, bound time.Duration, args ...string) error {
	t.Helper()
	cmd := NewCommand()
	cmd.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(t.Context()) }()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		t.Fatalf("millwright-manager %s did not return within %s", strings.Join(args, " "), bound)
		return nil
	}
}

// A --driver socket that does not exist is a start-up error that says so,
// not a manager that fails every Machine later (or a panic).
func TestStartupFailsWhenDriverSocketIsMissing(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "missing.sock")
	err := runCommand(t, 20*time.Second,
		"--kubeconfig", testenv.OfflineKubeconfig(t),
		"--driver", "sim=unix://"+socket,
		"--driver-startup-timeout", "1s",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	if err == nil {
		t.Fatal("the manager started without its driver")
	}
	want := `driver "sim": socket ` + socket + ` does not exist (waited --driver-startup-timeout 1s): start the driver first, or fix --driver sim=unix://` + socket
	if err.Error() != want {
		t.Errorf("error\n%q\nwant\n%q", err, want)
	}
	if code := cli.ExitCode(err); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
}

// A socket something else listens on, that never answers as a driver,
// fails the start with the driver's name and the call that failed.
func TestStartupFailsWhenDriverDoesNotAnswer(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "mute.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		// Accept and say nothing: not a gRPC server.
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	err = runCommand(t, 20*time.Second,
		"--kubeconfig", testenv.OfflineKubeconfig(t),
		"--driver", "sim=unix://"+socket,
		"--driver-startup-timeout", "1s",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	if err == nil {
		t.Fatal("the manager started without a working driver")
	}
	for _, want := range []string{`driver "sim" at unix://` + socket + ` did not answer GetPluginInfo within --driver-startup-timeout 1s`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// A kubeconfig that cannot be read is reported with its path.
func TestStartupFailsOnMissingKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope")
	err := runCommand(t, 10*time.Second, "--kubeconfig", path, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	if err == nil || !strings.Contains(err.Error(), "control cluster: loading kubeconfig "+path) {
		t.Fatalf("error %v; want it to name the control cluster's kubeconfig %s", err, path)
	}
}

// Outside a pod there is no namespace for the Lease unless a flag gives one.
func TestLeaseNamespace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		inCluster bool
		refused   bool
	}{
		{"no leader election", nil, false, false},
		{"outside a cluster", []string{"--leader-elect"}, false, true},
		{"in a pod", []string{"--leader-elect"}, true, false},
		{"--namespace", []string{"--leader-elect", "--namespace=team-a"}, false, false},
		{"--leader-elect-namespace", []string{"--leader-elect", "--leader-elect-namespace=kube-system"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			err = o.checkLeaseNamespace(tc.inCluster)
			if tc.refused != (err != nil) {
				t.Fatalf("error %v; refused want %v", err, tc.refused)
			}
			const want = "--leader-elect outside a cluster needs --leader-elect-namespace (or --namespace)"
			if err != nil && (!strings.Contains(err.Error(), want) || cli.ExitCode(err) != 2) {
				t.Errorf("error %v (exit %d); want a usage error containing %q", err, cli.ExitCode(err), want)
			}
		})
	}
}
