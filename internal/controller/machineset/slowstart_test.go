package machineset_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// neverJoinsSpec is a sim providerSpec whose VMs boot but never join.
const neverJoinsSpec = `{"region":"local","zones":["local-a"],"faults":{"bootFailure":{}}}`

// A set whose template a Machine has proven remembers it in its status:
// scaled to zero, with a manager restarted since (no memory left), it
// creates its whole window at once, although none of the new Machines
// ever runs. Slow start would create one and wait for it forever.
func TestProvenSetCreatesAllAtOnceAfterARestart(t *testing.T) {
	// With controller-runtime's priority queue, a manager stopped while
	// its controllers have items queued could outlast its 30s grace
	// period under -race here (a worker blocked in the queue's
	// hand-over); the plain queue stops cleanly. Nothing this test checks
	// depends on the queue.
	h := newHarnessWith(t, func(o *ctrl.Options) { o.Controller.UsePriorityQueue = ptr.To(false) })
	class := h.Class("c", controllertest.SimSpec)
	set(h, "proven", 1, "c", nil)
	waitReady(h, "proven", 1, 60*time.Second)
	h.Eventually(30*time.Second, "the set to record its template as proven", func() (bool, error) {
		ms := getSet(h, "proven")
		return ms.Status.ProvenTemplate != "" && meta.IsStatusConditionTrue(ms.Status.Conditions, v1alpha1.TemplateProvenCondition), nil
	})
	scaleTo(h, "proven", 0)
	waitReady(h, "proven", 0, 60*time.Second)
	// Gone, not only being deleted: a Machine still Ready while its
	// deletion finishes would be taken below for one of the new ones.
	h.Eventually(60*time.Second, "the proven set's Machine gone", func() (bool, error) {
		return len(machinesOf(h, "proven")) == 0, nil
	})

	// A restart, during which the class changes: from now on no VM of it
	// joins.
	h.StopManager()
	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.ProviderSpec = runtime.RawExtension{Raw: []byte(neverJoinsSpec)}
	if err := controllertest.Env.Client.Patch(context.Background(), class, patch); err != nil {
		t.Fatal(err)
	}
	h.StartManager()

	scaleTo(h, "proven", 20)
	h.Eventually(60*time.Second, "20 Machines of the proven set", func() (bool, error) {
		return len(machinesOf(h, "proven")) == 20, nil
	})
	for _, m := range machinesOf(h, "proven") {
		if meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition) {
			t.Fatalf("Machine %s runs: its class was meant never to join", m.Name)
		}
	}
	// Leave no Machine in creation for the manager to stop with (its
	// queue then stops within the grace period under -race too).
	scaleTo(h, "proven", 0)
	waitReady(h, "proven", 0, 60*time.Second)
}
