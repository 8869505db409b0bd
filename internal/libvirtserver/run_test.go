package libvirtserver

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/libvirtd"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func TestMain(m *testing.M) { os.Exit(libvirtd.Main(m, nil)) }

// serve runs millwright-libvirt's Run with uri as the default URI, and
// returns a client of its driver and its health address.
func serve(t *testing.T, uri string) (*driver.Client, string, *syncWriter) {
	t.Helper()
	o := NewOptions()
	o.Endpoint = "unix://" + filepath.Join(t.TempDir(), "libvirt.sock")
	o.HealthAddress = testenv.FreeAddr(t)
	o.DefaultURI = uri
	o.Reconnect = 200 * time.Millisecond
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncWriter{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	c, err := driver.Dial(o.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, o.HealthAddress, logs
}

// TestUnreachableLibvirtIsWaitedFor checks that a driver whose libvirt
// cannot be reached keeps running: /readyz says why it is not ready, the
// log says so, and calls answer Unavailable, so Machines wait.
func TestUnreachableLibvirtIsWaitedFor(t *testing.T) {
	c, health, logs := serve(t, "qemu:///system?socket=/nonexistent/libvirt-sock")
	testenv.Eventually(t, 30*time.Second, "the log to say libvirt is unreachable", func() (bool, error) {
		return strings.Contains(logs.String(), "libvirt unreachable; retrying"), nil
	})
	testenv.Eventually(t, 30*time.Second, "/readyz to say libvirt is unreachable", func() (bool, error) {
		code, body, err := testenv.HTTPGet("http://" + health + "/readyz")
		return err == nil && code == 503 && strings.Contains(body, "unreachable"), nil
	})
	if code, _, err := testenv.HTTPGet("http://" + health + "/healthz"); code != 200 {
		t.Errorf("/healthz: %d %v; the process is alive", code, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default", UID: "uid-unreachable"}}
	_, err := c.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
		Spec:       v1alpha1.MachineClassSpec{ProviderSpec: runtime.RawExtension{Raw: []byte(`{"kernel":"/proc/version"}`)}},
	}})
	if driver.CodeOf(err) != driver.Unavailable {
		t.Fatalf("CreateMachine with libvirt unreachable: %v; want Unavailable", err)
	}
}

// TestReadyWithLibvirt checks /readyz answers 200 once libvirt answers.
func TestReadyWithLibvirt(t *testing.T) {
	_, health, logs := serve(t, "qemu:///system")
	testenv.Eventually(t, 30*time.Second, "/readyz to answer 200", func() (bool, error) {
		code, _, err := testenv.HTTPGet("http://" + health + "/readyz")
		return err == nil && code == 200, nil
	})
	testenv.Eventually(t, 30*time.Second, "the log to say it connected", func() (bool, error) {
		return strings.Contains(logs.String(), "connected to libvirt"), nil
	})
}
