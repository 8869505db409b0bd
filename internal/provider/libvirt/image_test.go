package libvirt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestImageOverlay checks a VM booting an image writes a qcow2 overlay of
// its own, of diskSize, backed by the image, which stays as it was.
func TestImageOverlay(t *testing.T) {
	l := libvirtConn(t)
	base := filepath.Join(fixture.dir, "pool", fixture.image)
	before := fileSum(t, base)
	d := newDriver(t)
	cl := class("overlay", fmt.Sprintf(`{"memory":"128Mi","image":%q,"pool":%q,"diskSize":"64Mi","shutdownGracePeriod":"0s"}`, fixture.image, fixture.pool))
	m := machine("overlay")
	name := domainName(m)
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}) })
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	pool, err := l.StoragePoolLookupByName(fixture.pool)
	if err != nil {
		t.Fatal(err)
	}
	vol, err := l.StorageVolLookupByName(pool, diskVolume(name))
	if err != nil {
		t.Fatal(err)
	}
	x, err := l.StorageVolGetXMLDesc(vol, 0)
	if err != nil {
		t.Fatal(err)
	}
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	switch {
	case v.Target == nil || v.Target.Format == nil || v.Target.Format.Type != "qcow2":
		t.Errorf("the disk is not qcow2:\n%s", x)
	case v.BackingStore == nil || v.BackingStore.Path != base:
		t.Errorf("the disk is not backed by the image %s:\n%s", base, x)
	case v.Capacity == nil || v.Capacity.Value != 64<<20:
		t.Errorf("the disk's capacity is not diskSize (64Mi):\n%s", x)
	}
	if _, err := d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	if after := fileSum(t, base); !bytes.Equal(before, after) {
		t.Error("the image changed while a VM ran on it")
	}
	if _, err := l.StorageVolLookupByName(pool, fixture.image); err != nil {
		t.Errorf("the image is gone after the VM's deletion: %v", err)
	}
}

func fileSum(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return sum[:]
}

// TestDeleteWaitsNoLongerThanTheCall checks a deletion whose grace period
// outlasts the call's deadline answers Aborted, leaving the domain, and a
// later call, once the grace period is over, destroys and removes it.
func TestDeleteWaitsNoLongerThanTheCall(t *testing.T) {
	l := libvirtConn(t)
	d := newDriver(t)
	// SeaBIOS ignores the ACPI shutdown: only the destroy ends it.
	cl := class("grace", fmt.Sprintf(`{"memory":"128Mi","image":%q,"pool":%q,"shutdownGracePeriod":"4s"}`, fixture.image, fixture.pool))
	m := machine("grace")
	req := &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), req) })
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	short, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := d.DeleteMachine(short, req)
	if driver.CodeOf(err) != driver.Aborted {
		t.Fatalf("DeleteMachine with a deadline before the grace period's end: %v; want Aborted", err)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("DeleteMachine took %s, past its deadline", took)
	}
	if !domainExists(t, l, domainName(m)) {
		t.Fatal("the domain is gone before its grace period ended")
	}
	if _, err := d.DeleteMachine(ctx(t), req); err != nil {
		t.Fatalf("DeleteMachine after the grace period: %v", err)
	}
	if took := time.Since(start); took < 4*time.Second {
		t.Errorf("the domain was destroyed %s after the shutdown, before its 4s grace period", took)
	}
	if domainExists(t, l, domainName(m)) {
		t.Fatal("the domain exists after DeleteMachine")
	}
}

// TestNamedNetwork checks network.name attaches the VM's NIC to that
// libvirt network. The network is a bare bridge of the test's own, with no
// address: nothing is routed anywhere.
func TestNamedNetwork(t *testing.T) {
	l := libvirtConn(t)
	name := fmt.Sprintf("mwtest-%d", time.Now().UnixNano()%1_000_000)
	x, err := (&libvirtxml.Network{Name: name, Bridge: &libvirtxml.NetworkBridge{Name: "mwbr" + name[len("mwtest-"):]}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	net, err := l.NetworkCreateXML(x) // transient: gone when destroyed
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.NetworkDestroy(net) })

	d := newDriver(t)
	cl := class("network", fmt.Sprintf(`{"memory":"128Mi","image":%q,"pool":%q,"shutdownGracePeriod":"0s","network":{"name":%q}}`, fixture.image, fixture.pool, name))
	m := machine("network")
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}) })
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	dom, err := l.DomainLookupByName(domainName(m))
	if err != nil {
		t.Fatal(err)
	}
	live, err := l.DomainGetXMLDesc(dom, 0)
	if err != nil {
		t.Fatal(err)
	}
	var def libvirtxml.Domain
	if err := def.Unmarshal(live); err != nil {
		t.Fatal(err)
	}
	ifs := def.Devices.Interfaces
	if len(ifs) != 1 || ifs[0].Source == nil || ifs[0].Source.Network == nil || ifs[0].Source.Network.Network != name {
		t.Fatalf("the VM's NIC is not on network %s:\n%s", name, live)
	}
	if def.QEMUCommandline != nil {
		t.Errorf("a VM on a libvirt network also got QEMU arguments: %+v", def.QEMUCommandline)
	}
}

// TestDeleteGracePeriodSurvivesADriverRestart checks the grace period is
// counted from the first deletion call's shutdown request, which the
// domain's metadata keeps: a driver started afresh, called once that
// period is over, destroys the domain at once instead of asking the guest
// again and waiting a new grace period (SeaBIOS ignores the ACPI shutdown).
func TestDeleteGracePeriodSurvivesADriverRestart(t *testing.T) {
	l := libvirtConn(t)
	cl := class("restart", fmt.Sprintf(`{"memory":"128Mi","image":%q,"pool":%q,"shutdownGracePeriod":"10m"}`, fixture.image, fixture.pool))
	m := machine("restart")
	req := &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}
	first := newDriver(t)
	t.Cleanup(func() {
		_, _ = first.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: class("restart", imageSpec())})
	})
	if _, err := first.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	short := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	if _, err := first.DeleteMachine(short(), req); driver.CodeOf(err) != driver.Aborted {
		t.Fatalf("DeleteMachine within the grace period: %v; want Aborted", err)
	}
	c, err := dial(DefaultURI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.l.Disconnect()
	f, err := c.lookup(domainName(m))
	if err != nil || f == nil {
		t.Fatalf("the domain after the first deletion call: %v, %v", f, err)
	}
	asked, err := time.Parse(time.RFC3339Nano, f.meta.ShutdownRequested)
	if err != nil {
		t.Fatalf("the domain's metadata does not record the shutdown request: %v", err)
	}
	// The grace period is over, as if the driver had been down for it.
	meta := *f.meta
	meta.ShutdownRequested = asked.Add(-10 * time.Minute).Format(time.RFC3339Nano)
	if err := c.setMeta(f, &meta, "test: ageing the shutdown request of"); err != nil {
		t.Fatal(err)
	}
	// What the guest said last (this one boots nothing, so the test
	// writes it) is in the destroying driver's log: the deletion removes
	// the console log with the domain.
	const last = "the guest's last words"
	if err := appendTo(f.meta.ConsoleLog, "earlier\r\n"+last+"\r\n"); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	restarted := New(Options{Policy: testPolicy(), ConsoleDir: fixture.consoleDir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(restarted.Close)
	if _, err := restarted.DeleteMachine(short(), req); err != nil {
		t.Fatalf("DeleteMachine by a restarted driver after the grace period: %v; want the domain destroyed", err)
	}
	if domainExists(t, l, domainName(m)) {
		t.Fatal("the domain exists after DeleteMachine")
	}
	if out := logs.String(); !strings.Contains(out, "destroying it") || !strings.Contains(out, `consoleTail="earlier\n`+last+`"`) {
		t.Errorf("the driver's log of the destroy lacks the console's tail (%q, without CRs):\n%s", last, out)
	}
}

// appendTo appends text to the file at path.
func appendTo(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
