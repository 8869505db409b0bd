package simmachine

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/sim"
)

// Beyond the contract suite: how the controller uses the sim's driver.

const oneZone = `{"region":"local","zones":["local-a"]`

// vmsEver counts the VMs ever created for the Machine, deleted ones included.
func vmsEver(s *sim.Sim, ns, machine string) int {
	n := 0
	for _, h := range s.Cloud().History() {
		if h.Namespace == ns && h.MachineName == machine {
			n++
		}
	}
	return n
}

// Creates whose responses are lost (the VM is made, the call fails with a
// retryable code) are retried until one succeeds, and the SimMachine still
// has exactly one VM: create is idempotent per Machine.
func TestLostCreateResponsesMakeOneVM(t *testing.T) {
	s := startController(t)
	o := newOwned(t, oneZone+`,"faults":{"create":{"code":"Unavailable","count":3,"afterEffect":true}}}`, nil)
	o.eventually("to be ready", ready)
	if n := vmsEver(s, o.sm.Namespace, o.m.Name); n != 1 {
		t.Fatalf("%d VMs were made for one SimMachine", n)
	}
	if c := meta.FindStatusCondition(o.sm.Status.Conditions, infrav1.ReadyCondition); c == nil || c.Reason != infrav1.ReadyReasonProvisioned {
		t.Errorf("Ready condition %+v", c)
	}
}

// A VM that needs initialization is initialized before the SimMachine is ready.
func TestInitializationRunsBeforeReady(t *testing.T) {
	s := startController(t)
	o := newOwned(t, oneZone+`,"requireInitialization":true,"faults":{"initialize":{"code":"Uninitialized","count":1}}}`, nil)
	o.eventually("to be ready", ready)
	vms := s.Cloud().MachineVMs(o.sm.Namespace, o.m.Name)
	if len(vms) != 1 || !vms[0].Initialized {
		t.Fatalf("VMs %+v; want one, initialized", vms)
	}
	if vms[0].ProviderID != ptr.Deref(o.sm.Spec.ProviderID, "") || ptr.Deref(o.sm.Spec.FailureDomain, "") != "local-a" {
		t.Errorf("spec %+v does not name VM %s in local-a", o.sm.Spec, vms[0].ProviderID)
	}
}

// A terminal code from the driver is a terminal failure; no VM is left.
func TestTerminalCreateErrorFails(t *testing.T) {
	s := startController(t)
	o := newOwned(t, oneZone+`,"faults":{"create":{"code":"PermissionDenied"}}}`, nil)
	o.eventually("to fail with CreateError", failedWith(infrav1.FailureReasonCreateError))
	if o.sm.Status.Ready || o.sm.Spec.ProviderID != nil || len(s.Cloud().MachineVMs(o.sm.Namespace, o.m.Name)) != 0 {
		t.Errorf("a failed SimMachine has a VM: %+v %+v", o.sm.Spec, o.sm.Status)
	}
}

// A Machine failure domain outside the providerSpec's zones can never be
// honoured: a terminal InvalidConfiguration, not a VM elsewhere.
func TestFailureDomainOutsideZonesFails(t *testing.T) {
	startController(t)
	o := newOwned(t, oneZone+`}`, func(m *v1alpha1.Machine) { m.Spec.FailureDomain = "local-z" })
	o.eventually("to fail with InvalidConfiguration", failedWith(infrav1.FailureReasonInvalidConfiguration))
}

// While the cloud is out, the SimMachine waits (Ready False, Provisioning)
// and retries; it is provisioned once the outage ends.
func TestOutageIsRetried(t *testing.T) {
	s := startController(t)
	s.Cloud().SetOutage(true)
	o := newOwned(t, oneZone+`}`, nil)
	o.eventually("to report the outage", func(sm *infrav1.SimMachine) bool {
		c := meta.FindStatusCondition(sm.Status.Conditions, infrav1.ReadyCondition)
		return c != nil && c.Reason == infrav1.ReadyReasonProvisioning
	})
	s.Cloud().SetOutage(false)
	o.eventually("to be ready after the outage", ready)
}

// A VM deleted behind the controller's back is not replaced: the SimMachine
// fails (UpdateError) so that its Machine is replaced, and never gets a
// second VM.
func TestVanishedVMIsTerminal(t *testing.T) {
	s := startController(t)
	o := newOwned(t, oneZone+`}`, nil)
	o.eventually("to be ready", ready)
	vm := s.Cloud().MachineVMs(o.sm.Namespace, o.m.Name)[0]
	if _, err := s.Cloud().DeleteVM(vm.ID); err != nil {
		t.Fatal(err)
	}
	o.patch(func(sm *infrav1.SimMachine) { sm.Annotations = map[string]string{"poke": "1"} }) // the sim sends no events
	o.eventually("to fail with UpdateError", failedWith(infrav1.FailureReasonUpdateError))
	if n := vmsEver(s, o.sm.Namespace, o.m.Name); n != 1 {
		t.Fatalf("%d VMs were made for one SimMachine", n)
	}
}

// Deletion retries failed deletes and removes the finalizer only once the
// VM is gone.
func TestDeletionRetriesUntilTheVMIsGone(t *testing.T) {
	s := startController(t)
	o := newOwned(t, oneZone+`,"faults":{"delete":{"code":"Unavailable","count":2}}}`, nil)
	o.eventually("to be ready", ready)
	if err := o.c.Delete(t.Context(), o.sm); err != nil {
		t.Fatal(err)
	}
	o.eventually("to be deleted", gone)
	if vms := s.Cloud().MachineVMs(o.sm.Namespace, o.m.Name); len(vms) != 0 {
		t.Fatalf("the SimMachine is gone but its VM %s is not", vms[0].ProviderID)
	}
}
