package safety_test

import (
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// An orphan VM is deleted on the second pass that sees it, not the first.
func TestOrphanCollectedOnSecondPass(t *testing.T) {
	w := newWorld(t, setup{cfg: testConfig()})
	w.Class("c", controllertest.SimSpec)
	w.waitPasses(1) // the pass at start-up, before the orphan exists

	vm := w.orphan("c", controllertest.SimSpec, "")
	w.pass()
	if !w.vmExists(vm.ID) {
		t.Fatal("the orphan VM was deleted on the first pass that saw it")
	}
	w.pass()
	if w.vmExists(vm.ID) {
		t.Fatal("the orphan VM survived the second pass that saw it")
	}
	w.ExpectEvent("OrphanVMCollected", "c")
}

// The VMs of a Machine still being created are never collected, even when
// a real orphan of the same class is.
func TestOrphanCollectionSparesMachinesBeingCreated(t *testing.T) {
	cfg := testConfig()
	cfg.OrphanVMsPeriod, cfg.OrphanConfirmAfter = 200*time.Millisecond, 100*time.Millisecond
	w := newWorld(t, setup{cfg: cfg})
	// Creates fail and the status cannot be read: the Machine stays in
	// creation without a providerID, blind to the VM that claims it.
	spec := `{"region":"local","zones":["local-a"],"faults":{"create":{"code":"Unavailable"},"getStatus":{"code":"Unavailable"}}}`
	w.Class("c", spec)
	w.Machine("m", "c", nil)
	w.Eventually(10*time.Second, "the Machine to retry its creation", func() (bool, error) {
		return w.Get("m").Status.LastOperation.State == v1alpha1.OperationFailed, nil
	})
	mine := w.orphan("c", spec, w.Prefix+"m")
	stray := w.orphan("c", spec, "")

	w.Eventually(20*time.Second, "the stray VM to be collected", func() (bool, error) {
		return !w.vmExists(stray.ID), nil
	})
	w.waitPasses(w.safety.Orphans().Passes() + 3)
	if !w.vmExists(mine.ID) {
		t.Fatal("the VM of a Machine being created was collected")
	}
	if m := w.Get("m"); m.Spec.ProviderID != "" {
		t.Fatalf("the Machine recorded providerID %q; the test needs it without one", m.Spec.ProviderID)
	}
}

// GetMachineStatus OutOfRange (two VMs claim a Machine) runs a pass at once,
// and neither VM of the Machine, still being created, is collected.
func TestOutOfRangeTriggersPass(t *testing.T) {
	w := newWorld(t, setup{cfg: testConfig()}) // period: an hour
	w.waitPasses(1)
	a := w.orphan("c", controllertest.SimSpec, w.Prefix+"m")
	b := w.orphan("c", controllertest.SimSpec, w.Prefix+"m")
	before := w.safety.Orphans().Passes()
	w.Class("c", controllertest.SimSpec)
	w.Machine("m", "c", nil)
	w.waitPasses(before + 1)
	w.pass()
	w.pass()
	if !w.vmExists(a.ID) || !w.vmExists(b.ID) {
		t.Fatal("a VM of a Machine without a providerID was collected")
	}
	if m := w.Get("m"); m.Status.LastOperation.ErrorCode != "OutOfRange" {
		t.Fatalf("lastOperation %+v, want an OutOfRange failure", m.Status.LastOperation)
	}
}
