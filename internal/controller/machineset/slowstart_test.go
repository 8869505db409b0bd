package machineset_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
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
	h := newHarness(t)
	class := h.Class("c", controllertest.SimSpec)
	set(h, "proven", 1, "c", nil)
	waitReady(h, "proven", 1, 60*time.Second)
	h.Eventually(30*time.Second, "the set to record its template as proven", func() (bool, error) {
		ms := getSet(h, "proven")
		return ms.Status.ProvenTemplate != "" && meta.IsStatusConditionTrue(ms.Status.Conditions, v1alpha1.TemplateProvenCondition), nil
	})
	scaleTo(h, "proven", 0)
	waitReady(h, "proven", 0, 60*time.Second)

	// From now on no VM of the class joins.
	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.ProviderSpec = runtime.RawExtension{Raw: []byte(neverJoinsSpec)}
	if err := controllertest.Env.Client.Patch(context.Background(), class, patch); err != nil {
		t.Fatal(err)
	}
	h.StopManager()
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
}
