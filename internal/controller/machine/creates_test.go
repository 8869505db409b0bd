package machine_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// slowCreateSpec is a sim class whose VM creates take an hour (the test
// config's call timeout is raised above that).
const slowCreateSpec = `{"region":"local","zones":["local-a"],"faults":{"create":{"latency":"1h"}}}`

// More slow creates than the harness has machine workers do not hold the
// workers: a Machine of a fast class still gets its VM and Node.
func TestSlowCreatesHoldNoWorker(t *testing.T) {
	h, calls := newCountingHarness(t, func(c *machine.Config) { c.DriverCallTimeout = 2 * time.Hour })
	h.Class("slow", slowCreateSpec)
	h.Class("fast", simSpec)
	slow := []string{"slow-0", "slow-1", "slow-2", "slow-3", "slow-4", "slow-5"} // the harness runs 4 workers
	for _, name := range slow {
		h.Machine(name, "slow", nil)
	}
	for _, name := range slow {
		waitCreating(h, calls, name)
	}
	h.Machine("fast", "fast", nil)
	h.WaitPhase("fast", v1alpha1.PhaseRunning, 30*time.Second)
	for _, name := range slow {
		if m := h.Get(name); m.Spec.ProviderID != "" || len(h.VMs(name)) != 0 {
			t.Errorf("%s: providerID %q and %d VMs while its create is still running", name, m.Spec.ProviderID, len(h.VMs(name)))
		}
	}
}

// A Machine deleted while its create is in flight waits for the call, then
// deletes the VM the call made: no VM outlives its Machine.
func TestDeleteDuringCreateDeletesTheVM(t *testing.T) {
	h, calls := newCountingHarness(t, nil)
	h.Class("slowish", `{"region":"local","zones":["local-a"],"faults":{"create":{"latency":"3s"}}}`)
	h.Machine("m", "slowish", nil)
	waitCreating(h, calls, "m")
	h.DeleteMachine("m")
	h.WaitGone("m")
	// Had the deletion not waited, the create would end after the Machine
	// is gone and leave its VM behind.
	h.Eventually(30*time.Second, "the create to have made its VM", func() (bool, error) {
		return len(h.Sim.Cloud().History()) == 1, nil
	})
	if n := len(h.VMs("m")); n != 0 {
		t.Fatalf("%d VMs of the deleted Machine are left, want 0", n)
	}
}

// waitCreating waits until the Machine's create call has started, and
// checks what the Machine shows meanwhile: no status written yet (the
// create's outcome is its first status write) and, for the orphan
// collection, a create that may be in flight.
func waitCreating(h *controllertest.Harness, calls *createCalls, name string) {
	h.T.Helper()
	h.Eventually(30*time.Second, name+" to be creating its VM", func() (bool, error) {
		return calls.started(h.Prefix + name), nil
	})
	m := h.Get(name)
	if !machinefacts.CreateMayBeInFlight(m) {
		h.T.Fatalf("%s: the orphan collection would not protect the VM its create is making: %+v", name, m.Status)
	}
	if m.Status.Phase != "" {
		h.T.Errorf("%s: phase %q while its first create runs; want none (no status write before the create) %+v", name, m.Status.Phase, m.Status)
	}
}

// A create takes longer than the manager's reconciliation timeout, which
// bounds every reconcile's context: it still makes its VM, as it runs under
// a context of its own.
func TestCreatesOutliveTheReconciliationTimeout(t *testing.T) {
	h := controllertest.New(t, controllertest.Options{Manager: func(o *ctrl.Options) {
		o.Controller.ReconciliationTimeout = time.Second
	}})
	h.Class("slowish", `{"region":"local","zones":["local-a"],"faults":{"create":{"latency":"3s"}}}`)
	h.Machine("m", "slowish", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 60*time.Second)
	if n := len(h.Sim.Cloud().History()); n != 1 {
		t.Fatalf("%d VMs were ever created; want 1", n)
	}
}

// A Machine whose creation timeout passes while its create still runs is
// Failed at once, not when the call ends: its status is held back only
// while nothing but the create's outcome is left to say.
func TestCreationTimeoutDuringACreateIsWritten(t *testing.T) {
	h, calls := newCountingHarness(t, func(c *machine.Config) { c.DriverCallTimeout = 2 * time.Hour })
	h.Class("slow", slowCreateSpec)
	h.Machine("m", "slow", func(m *v1alpha1.Machine) {
		m.Spec.Lifecycle.CreationTimeout = &metav1.Duration{Duration: 2 * time.Second}
	})
	h.Eventually(30*time.Second, "m to be creating its VM", func() (bool, error) { return calls.started(h.Prefix + "m"), nil })
	m := h.WaitPhase("m", v1alpha1.PhaseFailed, 30*time.Second)
	if m.Status.FailureReason != machine.FailureCreationTimeout {
		t.Fatalf("failure %q, want %s", m.Status.FailureReason, machine.FailureCreationTimeout)
	}
	if len(h.VMs("m")) != 0 {
		t.Fatal("the create ended: the test's create was meant to outlast it")
	}
}
