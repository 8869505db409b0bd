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
	kernel := testKernel(t)
	initramfs := qemuReadable(t, repoFile(t, "bin/vm/initramfs.img"), "initramfs")
	var logs syncBuffer
	d := New(Options{ConsoleDir: fixture.consoleDir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(d.Close)

	const grace = 90 * time.Second
	cl := class("acpi", fmt.Sprintf(`{"memory":"256Mi","domainType":"qemu","kernel":%q,"initramfs":%q,"cmdline":"console=ttyS0 panic=-1","pool":%q,"shutdownGracePeriod":%q,"network":{"user":{}}}`,
		kernel, initramfs, fixture.pool, grace))
	m := machine("acpi")
	del := &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}
	t.Cleanup(func() {
		// Destroyed at once if the test failed before its deletion.
		cl.Spec.ProviderSpec.Raw = bytes.Replace(cl.Spec.ProviderSpec.Raw, []byte(grace.String()), []byte("0s"), 1)
		_, _ = d.DeleteMachine(ctx(t), del)
	})
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl, Secret: unreachableUserData(t, m.Name)}); err != nil {
		t.Fatal(err)
	}
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
	for _, want := range []string{"input devices for the ACPI power button", "ACPI power button: stopping", "the agent stopped", "reboot: Power down"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the console lacks %q: the guest did not shut down by itself\n--- console ---\n%s", want, out)
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
