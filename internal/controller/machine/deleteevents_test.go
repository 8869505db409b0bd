package machine_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// A routine deletion (nothing failed, nothing forced) emits no Event: an
// Event is an API write, and a rolling update deletes as many Machines as
// it creates. The status records the drain; the MachineSet's
// MachinesDeleted Event names the Machines.
func TestRoutineDeletionEmitsNoEvent(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("m", "small", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	h.DeleteMachine("m")
	h.WaitGone("m")
	// The controller's Events leave through one queue, in order: once an
	// Event emitted after the deletion is there, one of the deletion's
	// would be too.
	h.Machine("later", "missing", nil)
	h.ExpectEvent(machine.ReasonClassNotFound, "later")
	events := &corev1.EventList{}
	if err := controllertest.Env.Client.List(context.Background(), events, client.InNamespace(h.NS)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == h.Prefix+"m" {
			t.Errorf("Event %s %s %q on a Machine deleted without trouble; want none", e.Type, e.Reason, e.Message)
		}
	}
}
