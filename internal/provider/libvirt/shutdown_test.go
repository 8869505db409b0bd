package libvirt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/tokenbootstrap"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestDeleteShutsTheGuestDown boots the node agent's kernel and initramfs
// (bin/vm, `make tools`) with user data whose API server cannot be
// reached, so the agent keeps retrying its bootstrap, then deletes the
// Machine with a grace period of 90 s: the driver's ACPI shutdown must
// make the guest stop its agent and power itself off, which the console
// (read through a descriptor opened before the deletion removes the file)
// and the driver's log show, and the deletion ends well within the grace
// period, leaving no libvirt log of the domain. It logs how long the
// deletion took.
func TestDeleteShutsTheGuestDown(t *testing.T) {
	const grace = 90 * time.Second
	d, logs, m, del := agentVM(t, "acpi", grace)
	// The agent runs (and pid 1 watches the power button) once it retries.
	const retrying = "bootstrap failed, retrying"
	testenv.Eventually(t, timeoutBoot, "the agent retrying its bootstrap", func() (bool, error) {
		return strings.Contains(d.ConsoleTail(m, 100), retrying), nil
	})
	console, err := os.Open(ConsoleLog(fixture.consoleDir, domainName(m)))
	if err != nil {
		t.Fatal(err)
	}
	defer console.Close()

	qemuLog := QEMULog(DefaultQEMULogDir, domainName(m))
	if _, err := os.Stat(qemuLog); err != nil {
		t.Fatalf("libvirt's log of the running domain: %v", err)
	}

	begin := time.Now()
	long, cancel := context.WithTimeout(context.Background(), grace+time.Minute)
	defer cancel()
	if _, err := d.DeleteMachine(long, del); err != nil {
		t.Fatalf("DeleteMachine: %v", err)
	}
	took := time.Since(begin)
	t.Logf("DeleteMachine of a running agent: %.1fs from the call to the domain undefined (grace period %s)", took.Seconds(), grace)

	out, err := io.ReadAll(console)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(Power Button) for the ACPI power button", "KEY_POWER pressed", "ACPI power button: stopping", "the agent stopped", "reboot: Power down"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the console lacks %q: the guest did not shut down by itself\n--- console ---\n%s", want, out)
		}
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "input device") || strings.Contains(line, "power button") {
			t.Logf("console: %s", strings.TrimSpace(line))
		}
	}
	if !strings.Contains(logs.String(), "the guest shut down after the ACPI shutdown") || strings.Contains(logs.String(), "destroying it") {
		t.Errorf("the driver's log does not show the guest shutting down by itself:\n%s", logs.String())
	}
	if domainExists(t, libvirtConn(t), domainName(m)) {
		t.Error("the domain exists after DeleteMachine")
	}
	if _, err := os.Stat(qemuLog); !os.IsNotExist(err) {
		t.Errorf("libvirt's log of the deleted domain %s is left behind (%v)", qemuLog, err)
	}
}

// unreachableUserData is a TokenBootstrapConfig's user data whose API
// server nothing listens at (port 1 of the host's loopback, seen from a
// guest on QEMU's user network): the agent starts and retries forever.
func unreachableUserData(t *testing.T, node string) *corev1.Secret {
	t.Helper()
	return userDataFor(t, node, "https://10.0.2.2:1")
}

// userDataFor is the node agent's user data joining the API server at
// server, with a CA of its own (no API server's certificate matches it).
func userDataFor(t *testing.T, node, server string) *corev1.Secret {
	t.Helper()
	ca, _, err := certutil.GenerateSelfSignedCertKey("unreachable", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ud, err := tokenbootstrap.UserData(tokenbootstrap.JoinData{Server: server, CA: ca, Token: "abcdef.0123456789abcdef", NodeName: node})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{Data: map[string][]byte{"userData": ud}}
}

// syncBuffer is a bytes.Buffer safe for the driver's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDeleteEarlyInBoot deletes an agent VM right after its creation,
// before its kernel has loaded the button module or pid 1 watches the
// power button: QEMU drops a press the guest has not enabled (ACPI
// PWRBTN_EN), and evdev one nobody reads. The deletion must press again
// while it waits, so the guest still powers itself off within the grace
// period instead of being destroyed at its end. It logs how long it took.
func TestDeleteEarlyInBoot(t *testing.T) {
	const grace = 45 * time.Second
	d, logs, m, del := agentVM(t, "early", grace)
	console, err := os.Open(ConsoleLog(fixture.consoleDir, domainName(m)))
	if err != nil {
		t.Fatal(err)
	}
	defer console.Close()

	begin := time.Now()
	long, cancel := context.WithTimeout(context.Background(), grace+time.Minute)
	defer cancel()
	if _, err := d.DeleteMachine(long, del); err != nil {
		t.Fatalf("DeleteMachine: %v", err)
	}
	t.Logf("DeleteMachine right after CreateMachine: %.1fs (grace period %s)", time.Since(begin).Seconds(), grace)
	out, _ := io.ReadAll(console)
	if !strings.Contains(logs.String(), "the guest shut down after the ACPI shutdown") || !strings.Contains(logs.String(), "pressed the ACPI power button again") {
		t.Errorf("the driver's log does not show the guest shutting down by itself after a press repeated:\n%s\n--- console ---\n%s", logs.String(), out)
	}
	// The console, deleted with the domain, is in the driver's log: the
	// guest saw the second press only.
	if !strings.Contains(logs.String(), "pressesRepeated=") || !strings.Contains(logs.String(), "KEY_POWER pressed on input device event1") {
		t.Errorf("the driver's log of a guest that missed a press lacks the console's tail showing the press it saw:\n%s", logs.String())
	}
}

// TestNextPress checks the schedule of repeated presses: every repress
// from the first, whenever the call that presses starts.
func TestNextPress(t *testing.T) {
	asked := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct{ now, want time.Duration }{
		{0, repress},
		{repress / 2, repress},
		{repress, 2 * repress},
		{repress + time.Millisecond, 2 * repress},
		{-time.Second, repress}, // another driver's clock ahead
	} {
		if got := nextPress(asked, asked.Add(c.now)).Sub(asked); got != c.want {
			t.Errorf("nextPress at asked%+v = asked+%v, want asked+%v", c.now, got, c.want)
		}
	}
}

// agentVM creates a VM booting the agent's initramfs, on a driver of its
// own whose log goes to the returned buffer, with the shutdown grace
// period grace; name names its class and Machine. If the test ends before
// deleting it, its cleanup destroys it at once.
func agentVM(t *testing.T, name string, grace time.Duration) (*Driver, *syncBuffer, *v1alpha1.Machine, *driver.DeleteMachineRequest) {
	t.Helper()
	kernel := testKernel(t)
	initramfs := qemuReadable(t, repoFile(t, "bin/vm/initramfs.img"), "initramfs")
	logs := &syncBuffer{}
	d := New(Options{Policy: testPolicy(), ConsoleDir: fixture.consoleDir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(d.Close)
	cl := class(name, fmt.Sprintf(`{"memory":"256Mi","domainType":"qemu","kernel":%q,"initramfs":%q,"cmdline":"console=ttyS0 panic=-1","pool":%q,"shutdownGracePeriod":%q,"network":{"user":{}}}`,
		kernel, initramfs, fixture.pool, grace))
	m := machine(name)
	del := &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}
	t.Cleanup(func() {
		cl.Spec.ProviderSpec.Raw = bytes.Replace(cl.Spec.ProviderSpec.Raw, []byte(grace.String()), []byte("0s"), 1)
		_, _ = d.DeleteMachine(ctx(t), del)
	})
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl, Secret: unreachableUserData(t, m.Name)}); err != nil {
		t.Fatal(err)
	}
	return d, logs, m, del
}
