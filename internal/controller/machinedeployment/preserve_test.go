package machinedeployment_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestAutoPreserveNotDuringARollout: the deployment's autoPreserveFailedMax
// reaches its set while no rollout runs, and a failed Machine is kept;
// once a rollout starts (here one that cannot finish: the new class never
// boots) every set's limit is 0, the kept Machine is released and
// replaced, and a Machine failing mid-rollout is replaced, not kept.
func TestAutoPreserveNotDuringARollout(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", `{"region":"local","zones":["local-a"]}`)
	h.Class("noboot", `{"region":"local","zones":["local-a"],"faults":{"bootFailure":{}}}`)
	h.deployment("web", 2, "v1", func(md *v1alpha1.MachineDeployment) {
		md.Spec.AutoPreserveFailedMax = ptr.To[int32](1)
		md.Spec.MaxConcurrentReplacements = ptr.To[int32](2)
		md.Spec.Template.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: time.Second}
	})
	h.waitComplete("web", 60*time.Second)
	if sets := h.sets("web"); len(sets) != 1 || ptr.Deref(sets[0].Spec.AutoPreserveFailedMax, -1) != 1 {
		t.Fatalf("the set's autoPreserveFailedMax is not the deployment's 1: %+v", sets[0].Spec.AutoPreserveFailedMax)
	}

	first := h.machines("web")[0]
	if _, err := h.Sim.Cloud().SetNodeReady(first.Status.NodeRef.Name, false); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the failed Machine kept beside two available ones", func() (bool, error) {
		kept, avail := false, 0
		for _, m := range h.machines("web") {
			if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PreservedCondition); m.Name == first.Name && c != nil &&
				c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.PreservedAutoReason {
				kept = true
			}
			if available(&m) {
				avail++
			}
		}
		return kept && avail == 2 && h.md("web").Status.PreservedReplicas == 1, nil
	})

	h.update("web", useClass("noboot"))
	h.Eventually(30*time.Second, "every set's limit 0 and the kept Machine gone", func() (bool, error) {
		sets := h.sets("web")
		for _, ms := range sets {
			if ptr.Deref(ms.Spec.AutoPreserveFailedMax, -1) != 0 {
				return false, nil
			}
		}
		for _, m := range h.machines("web") {
			if m.Name == first.Name {
				return false, nil
			}
		}
		return len(sets) == 2, nil
	})
	h.ExpectEvent("AutoPreserveReleased", h.sets("web")[0].Name)

	var second v1alpha1.Machine
	for _, m := range h.machines("web") {
		if available(&m) {
			second = m
		}
	}
	if _, err := h.Sim.Cloud().SetNodeReady(second.Status.NodeRef.Name, false); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the Machine failed mid-rollout replaced", func() (bool, error) {
		avail := 0
		for _, m := range h.machines("web") {
			if m.Name == second.Name {
				return false, nil
			}
			if available(&m) {
				avail++
			}
		}
		return avail == 2, nil
	})
	for _, m := range h.machines("web") {
		if m.Annotations[v1alpha1.AutoPreservedAnnotation] != "" || meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.PreservedCondition) {
			t.Errorf("Machine %s is preserved during the rollout", m.Name)
		}
	}
}
