package machine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// A Machine of a class that never existed never started a create: there
// is no VM to delete, and its deletion does not wait for a person.
func TestDeletionOfAMachineWhoseClassNeverExisted(t *testing.T) {
	h := newHarness(t, nil)
	h.Machine("m", "never", nil)
	h.Eventually(10*time.Second, "a ClassNotFound condition", func() (bool, error) {
		c := meta.FindStatusCondition(h.Get("m").Status.Conditions, v1alpha1.InfrastructureReadyCondition)
		return c != nil && c.Reason == machine.ReasonClassNotFound, nil
	})
	h.DeleteMachine("m")
	h.WaitGone("m")
}

// A Machine deleted before its first reconcile has recorded nothing: its
// class is missing, nothing was started, and it goes too.
func TestDeletionOfAnUnreconciledMachineWhoseClassNeverExisted(t *testing.T) {
	h := newHarness(t, nil)
	h.StopManager()
	h.Machine("m", "never", func(m *v1alpha1.Machine) { m.Finalizers = []string{v1alpha1.MachineFinalizer} })
	h.DeleteMachine("m")
	h.StartManager()
	h.WaitGone("m")
}

// A Machine whose create was tried keeps waiting when its class goes: the
// create may have made a VM that only the class's driver can delete.
func TestDeletionWaitsForAClassGoneAfterACreate(t *testing.T) {
	h := newHarness(t, nil)
	class := h.Class("flaky", `{"region":"local","zones":["local-a"],"faults":{"create":{"code":"Unavailable","count":1000}}}`)
	h.Machine("m", "flaky", nil)
	h.WaitPhase("m", v1alpha1.PhaseCrashLoopBackOff, 30*time.Second)
	// No class controller runs here: nothing holds the class.
	if err := controllertest.Env.Client.Delete(context.Background(), class); err != nil {
		t.Fatal(err)
	}
	h.DeleteMachine("m")
	// Twice: the second decision reads the status the first one wrote.
	h.Eventually(30*time.Second, "the deletion to wait for a person, twice", func() (bool, error) {
		m := h.Get("m")
		op := m.Status.LastOperation
		if strings.HasPrefix(op.Description, "no VM to delete") {
			return false, fmt.Errorf("the deletion went on (%s) without the class that made the VM", op.Description)
		}
		return op.Type == v1alpha1.OperationDelete && op.FailureCount >= 2 &&
			strings.HasPrefix(op.Description, "cannot delete the VM"), nil
	})
	c := meta.FindStatusCondition(h.Get("m").Status.Conditions, v1alpha1.InfrastructureReadyCondition)
	if c == nil || c.Reason != machine.ReasonClassGone {
		t.Fatalf("InfrastructureReady %+v, want reason %s", c, machine.ReasonClassGone)
	}
}

// A Machine that recorded its class missing, and whose class then came,
// records that its create started before the call: a recorded
// ClassNotFound always means that no create started since.
func TestCreateAfterAMissingClassIsRecordedFirst(t *testing.T) {
	h, d := newLimitedHarness(t)
	h.Machine("m", "later", nil)
	h.Eventually(10*time.Second, "a ClassNotFound condition", func() (bool, error) {
		c := meta.FindStatusCondition(h.Get("m").Status.Conditions, v1alpha1.InfrastructureReadyCondition)
		return c != nil && c.Reason == machine.ReasonClassNotFound, nil
	})
	h.Class("later", simSpec)
	h.Eventually(30*time.Second, "the create in flight", func() (bool, error) {
		inFlight, _ := d.creates.counts()
		return inFlight == 1, nil
	})
	m := &v1alpha1.Machine{}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: h.Prefix + "m"}, m); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InfrastructureReadyCondition); c == nil || c.Reason != machine.ReasonCreating {
		t.Fatalf("InfrastructureReady %+v while the create runs, want reason %s recorded before the call", c, machine.ReasonCreating)
	}
	close(d.creates.released)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
}
