package simserver

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// runSim runs Run in the background and returns a function that stops it
// as SIGTERM would and returns Run's error.
func runSim(t *testing.T, o *Options) (stop func() error) {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return within 20s of its context's end")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// A VM created through the socket is still there after a graceful restart
// with the same --snapshot: the last snapshot is written on the way out.
func TestSnapshotSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	o := NewOptions()
	o.Endpoint = "unix://" + filepath.Join(dir, "sim.sock")
	o.AdminAddress = "127.0.0.1:0"
	o.Kubeconfig = testenv.OfflineKubeconfig(t)
	o.NodeMode = "builtin"
	o.SnapshotPath = filepath.Join(dir, "sim.json")

	class := simClass("snap", `{"region":"local","zones":["local-a"]}`)
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "snap-m1", Namespace: "default"}}

	stop := runSim(t, o)
	c := dial(t, o.Endpoint)
	created, err := c.CreateMachine(t.Context(), &driver.CreateMachineRequest{Machine: m, MachineClass: class})
	if err != nil {
		t.Fatalf("CreateMachine: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run after a graceful stop: %v", err)
	}
	if _, err := os.Stat(o.SnapshotPath); err != nil {
		t.Fatalf("no snapshot after a graceful stop: %v", err)
	}

	runSim(t, o)
	c = dial(t, o.Endpoint)
	got, err := c.GetMachineStatus(t.Context(), &driver.GetMachineStatusRequest{Machine: m, MachineClass: class})
	if err != nil {
		t.Fatalf("GetMachineStatus after the restart: %v", err)
	}
	if got.ProviderID != created.ProviderID {
		t.Errorf("providerID %q after the restart; created %q", got.ProviderID, created.ProviderID)
	}
}

// A sim that cannot serve its socket (another sim serves it) fails at once
// with the reason, instead of running without a driver.
func TestRunFailsWhenSocketIsTaken(t *testing.T) {
	dir := t.TempDir()
	o := NewOptions()
	o.Endpoint = "unix://" + filepath.Join(dir, "sim.sock")
	o.AdminAddress = ""
	o.Kubeconfig = testenv.OfflineKubeconfig(t)
	runSim(t, o)
	dial(t, o.Endpoint) // the first sim serves

	second := *o
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, &second, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "another process is serving on it") {
			t.Fatalf("second sim on the same socket: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second sim on a taken socket is still running after 10s")
	}
}

// dial connects to the sim at endpoint and waits until it answers.
func dial(t *testing.T, endpoint string) *driver.Client {
	t.Helper()
	c, err := driver.Dial(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.GetPluginInfo(ctx, &driver.GetPluginInfoRequest{}); err != nil {
		t.Fatalf("the sim at %s does not answer: %v", endpoint, err)
	}
	return c
}
