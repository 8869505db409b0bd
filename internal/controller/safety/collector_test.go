package safety_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/pkg/driver"
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

// renamedDriver names every VM of the sim as a libvirt driver whose host
// was renamed names its VMs: ListMachines and GetMachineStatus report
// another providerID ("sim://REGION/ZONE.renamed/ID") than the one the
// VM was created with, and DeleteMachine takes either form.
type renamedDriver struct{ driver.Driver }

func (d renamedDriver) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	m := req.Machine.DeepCopy()
	m.Spec.ProviderID = strings.Replace(m.Spec.ProviderID, ".renamed/", "/", 1)
	r := *req
	r.Machine = m
	return d.Driver.DeleteMachine(ctx, &r)
}

func renamed(providerID string) string {
	i := strings.LastIndex(providerID, "/")
	return providerID[:i] + ".renamed" + providerID[i:]
}

func (d renamedDriver) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	resp, err := d.Driver.ListMachines(ctx, req)
	if err == nil {
		for i := range resp.VMs {
			resp.VMs[i].ProviderID = renamed(resp.VMs[i].ProviderID)
		}
	}
	return resp, err
}

func (d renamedDriver) GetMachineStatus(ctx context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	resp, err := d.Driver.GetMachineStatus(ctx, req)
	if err == nil {
		resp.ProviderID = renamed(resp.ProviderID)
	}
	return resp, err
}

// A VM listed under another providerID than its Machine records is that
// Machine's when the driver says so (a renamed host): it is never
// collected, while a VM no Machine claims is, on the same passes.
func TestRenamedVMOfALiveMachineIsKept(t *testing.T) {
	w := newWorld(t, setup{cfg: testConfig(), wrap: func(d driver.Driver) driver.Driver { return renamedDriver{d} }})
	w.waitPasses(1)
	w.Class("c", controllertest.SimSpec)
	w.Machine("m", "c", nil)
	m := w.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	stray := w.orphan("c", controllertest.SimSpec, "")
	w.pass()
	w.pass()
	if w.vmExists(stray.ID) {
		t.Fatal("the VM no Machine claims survived two passes")
	}
	if vms := w.VMs("m"); len(vms) != 1 || vms[0].ProviderID != m.Spec.ProviderID {
		t.Fatalf("the Running Machine's VM %s, listed as %s, was collected: the Machine's VMs are now %v",
			m.Spec.ProviderID, renamed(m.Spec.ProviderID), vms)
	}
}

// A second VM claiming a live Machine (a lost create's) is collected once
// the driver names the Machine's VM as another one.
func TestSecondVMOfALiveMachineIsCollected(t *testing.T) {
	w := newWorld(t, setup{cfg: testConfig()})
	w.waitPasses(1)
	w.Class("c", controllertest.SimSpec)
	w.Machine("m", "c", nil)
	m := w.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	second := w.orphan("c", controllertest.SimSpec, m.Name)
	w.pass()
	w.pass()
	if w.vmExists(second.ID) {
		t.Fatal("a second VM claiming a Running Machine that records another survived two passes")
	}
	if vms := w.VMs("m"); len(vms) != 1 || vms[0].ProviderID != m.Spec.ProviderID {
		t.Fatalf("the Machine's own VM %s was collected: its VMs are now %v", m.Spec.ProviderID, vms)
	}
	w.ExpectEvent("OrphanVMCollected", "c")
}

// Machine deletions in a row ask for passes spaced by the gap (here
// OrphanConfirmAfter, a second), not a pass each: at 5000 Machines a pass
// at every deletion of a rolling update cost a fifth of the manager's CPU.
// A deletion still brings a pass within the gap.
func TestDeletionsInARowSharePasses(t *testing.T) {
	cfg := testConfig() // period: an hour
	cfg.OrphanConfirmAfter = time.Second
	w := newWorld(t, setup{cfg: cfg})
	w.Class("c", controllertest.SimSpec)
	const n = 30
	for i := range n {
		// Paused and without a finalizer: nothing but this test touches them.
		w.Machine(fmt.Sprintf("m%d", i), "c", func(m *v1alpha1.Machine) {
			m.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"}
		})
	}
	w.waitPasses(1)
	// Deletions a tenth of a second apart, each after a pass would have
	// ended: without the gap, about one pass each.
	before := w.safety.Orphans().Passes()
	start := time.Now()
	for i := range n {
		w.DeleteMachine(fmt.Sprintf("m%d", i))
		time.Sleep(100 * time.Millisecond)
	}
	w.waitPasses(before + 2) // the deletions do bring passes
	elapsed := time.Since(start)
	passes := w.safety.Orphans().Passes() - before
	// One pass at most per second of deletions, one more for the last.
	if most := int64(elapsed/time.Second) + 2; passes > most {
		t.Fatalf("%d passes for %d deletions in %s, want at most %d", passes, n, elapsed.Round(time.Millisecond), most)
	}
	t.Logf("%d passes for %d deletions in %s", passes, n, elapsed.Round(time.Millisecond))
}
