package machinedeployment_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestRolloutAfterReplacesEveryMachine: setting spec.rolloutAfter to now
// rolls out a new set of the same template within the strategy's bounds,
// replacing every Machine; once done, later reconciles (a scale-up) make
// no third set; a rolloutAfter still to come starts a rollout when it
// passes.
func TestRolloutAfterReplacesEveryMachine(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", slowSpec)
	h.deployment("web", 4, "v1", func(md *v1alpha1.MachineDeployment) { md.Spec.Strategy = rolling("1", "0") })
	h.waitComplete("web", 90*time.Second)
	before := map[string]bool{}
	for _, m := range h.machines("web") {
		before[m.Name] = true
	}

	w := h.watch("web", func(ms []v1alpha1.Machine) string {
		if len(ms) > 5 {
			return "more than replicas + maxSurge = 5 Machines exist"
		}
		return ""
	})
	now := metav1.Now()
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.RolloutAfter = &now })
	md := h.waitComplete("web", 120*time.Second)
	w.finish(t)

	sets := h.setsByRevision("web")
	if len(sets) != 2 || sets[1].Spec.Replicas != 0 || sets[2].Spec.Replicas != 4 || sets[2].Spec.Template.Spec.Class.Name != "v1" {
		t.Fatalf("sets after the restart: %v", summary(sets))
	}
	for _, m := range h.machines("web") {
		if before[m.Name] {
			t.Errorf("Machine %s from before the restart is still there", m.Name)
		}
	}
	h.ExpectEvent("ScalingMachineSet", md.Name)

	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 5 })
	h.waitComplete("web", 90*time.Second)
	if sets := h.setsByRevision("web"); len(sets) != 2 {
		t.Errorf("a scale-up after the restart made another set: %v", summary(sets))
	}

	// A time to come: nothing else happens meanwhile, so only the
	// controller waking itself at that time starts the rollout.
	later := metav1.NewTime(time.Now().Add(3 * time.Second))
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.RolloutAfter = &later })
	h.Eventually(60*time.Second, "a third set once the later rolloutAfter passed", func() (bool, error) {
		return len(h.sets("web")) == 3, nil
	})
	h.waitComplete("web", 120*time.Second)
	if sets := h.setsByRevision("web"); len(sets) != 3 || sets[3].Spec.Replicas != 5 {
		t.Errorf("sets after the second restart: %v", summary(sets))
	}
}
