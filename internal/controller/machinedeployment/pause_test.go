package machinedeployment_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// brokenSpec makes VMs whose Node never registers: a rollout to it sticks.
const brokenSpec = `{"region":"local","zones":["local-a"],"faults":{"bootFailure":{}}}`

func TestPauseAndResume(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", controllertest.SimSpec)
	h.Class("v2", controllertest.SimSpec)
	h.Class("v3", `{"region":"local","zones":["local-a"],"bootDelay":"1s"}`)
	h.deployment("web", 3, "v1", func(md *v1alpha1.MachineDeployment) { md.Spec.Strategy = rolling("1", "0") })
	h.waitComplete("web", 60*time.Second)

	// Paused: a new template makes no MachineSet, but scaling works.
	h.update("web", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Paused = true
		md.Spec.Template.Spec.Class.Name = "v2"
	})
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionUnknown, "DeploymentPaused", 10*time.Second)
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 4 })
	h.Eventually(30*time.Second, "the old set scaled to 4 while paused", func() (bool, error) {
		sets := h.sets("web")
		return len(sets) == 1 && sets[0].Spec.Replicas == 4 && liveByClass(h.machines("web"))["v1"] == 4, nil
	})
	h.Consistently(2*time.Second, "no rollout while paused", func() (bool, error) {
		return len(h.sets("web")) == 1 && liveByClass(h.machines("web"))["v2"] == 0, nil
	})

	// Resumed: the rollout runs.
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Paused = false })
	h.waitComplete("web", 60*time.Second)
	if byClass := liveByClass(h.machines("web")); byClass["v2"] != 4 {
		t.Errorf("machines after resuming: %v", byClass)
	}

	// Paused mid-rollout: the sets stay as they are until resumed.
	h.update("web", useClass("v3"))
	var specs map[string]int32
	h.Eventually(30*time.Second, "the rollout to v3 under way", func() (bool, error) {
		sets := h.setsByRevision("web")
		return len(sets) == 3 && sets[3].Spec.Replicas >= 1 && sets[2].Spec.Replicas == 4, nil
	})
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Paused = true })
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionUnknown, "DeploymentPaused", 10*time.Second)
	specs = map[string]int32{}
	for _, ms := range h.sets("web") {
		specs[ms.Name] = ms.Spec.Replicas
	}
	if sets := h.setsByRevision("web"); sets[2].Spec.Replicas == 0 {
		t.Fatalf("the rollout finished before the pause: %v", summary(sets))
	}
	h.Consistently(3*time.Second, "the sets' sizes held while paused", func() (bool, error) {
		for _, ms := range h.sets("web") {
			if specs[ms.Name] != ms.Spec.Replicas {
				return false, nil
			}
		}
		return true, nil
	})
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Paused = false })
	md := h.waitComplete("web", 60*time.Second)
	if md.Annotations[v1alpha1.RevisionAnnotation] != "3" {
		t.Errorf("revision %q after two rollouts, want 3", md.Annotations[v1alpha1.RevisionAnnotation])
	}
}

// TestProportionalScalingMidRollout scales a deployment whose rollout is
// stuck (the new class never boots; paused to hold the picture still).
func TestProportionalScalingMidRollout(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", controllertest.SimSpec)
	h.Class("broken", brokenSpec)
	h.deployment("web", 6, "v1", func(md *v1alpha1.MachineDeployment) { md.Spec.Strategy = rolling("2", "0") })
	h.waitComplete("web", 60*time.Second)

	h.update("web", useClass("broken"))
	h.Eventually(30*time.Second, "the rollout stuck at 6 old + 2 new", func() (bool, error) {
		sets := h.setsByRevision("web")
		return len(sets) == 2 && sets[1].Spec.Replicas == 6 && sets[2].Spec.Replicas == 2, nil
	})
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Paused = true })
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionUnknown, "DeploymentPaused", 10*time.Second)

	// Scale-in: every set in proportion. Budget 3+2 = 5 of 8:
	// old round(6×5/8) = 4, new round(2×5/8) = 1.
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 3 })
	h.Eventually(30*time.Second, "old 4, new 1", func() (bool, error) {
		sets := h.setsByRevision("web")
		return sets[1].Spec.Replicas == 4 && sets[2].Spec.Replicas == 1, nil
	})

	// Scale-out: only the new set grows, within the surge budget 8+2 = 10.
	// While paused the Machines the scale-in removed are not drained, so
	// they still count (TerminationComplete): the new set gets what the
	// other Machine objects leave of 10.
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 8 })
	h.Eventually(30*time.Second, "old 4, new grown to the surge budget", func() (bool, error) {
		sets := h.setsByRevision("web")
		others := 0
		for _, m := range h.machines("web") {
			if m.Spec.Class.Name != "broken" || !m.DeletionTimestamp.IsZero() {
				others++
			}
		}
		return sets[1].Spec.Replicas == 4 && sets[2].Spec.Replicas > 1 && int(sets[2].Spec.Replicas) == 10-others, nil
	})
	// With TerminationStarted they no longer count: new 1+5 = 6.
	h.update("web", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Strategy.RollingUpdate.ReplacementPolicy = v1alpha1.TerminationStarted
	})
	h.Eventually(30*time.Second, "old 4, new 6", func() (bool, error) {
		sets := h.setsByRevision("web")
		return sets[1].Spec.Replicas == 4 && sets[2].Spec.Replicas == 6, nil
	})
	h.Consistently(time.Second, "the sizes settled", func() (bool, error) {
		sets := h.setsByRevision("web")
		return sets[1].Spec.Replicas == 4 && sets[2].Spec.Replicas == 6, nil
	})
	if st := h.md("web").Status; st.AvailableReplicas != 4 || st.UnavailableReplicas != 4 {
		t.Errorf("status available %d, unavailable %d; want 4, 4", st.AvailableReplicas, st.UnavailableReplicas)
	}
}

func TestProgressDeadlineAndRollback(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", controllertest.SimSpec)
	h.Class("broken", brokenSpec)
	h.deployment("web", 2, "v1", func(md *v1alpha1.MachineDeployment) { md.Spec.Strategy = rolling("1", "0") })
	h.waitComplete("web", 60*time.Second)

	start := time.Now()
	h.update("web", func(md *v1alpha1.MachineDeployment) {
		md.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
		md.Spec.Template.Spec.Class.Name = "broken"
	})
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionFalse, "ProgressDeadlineExceeded", 20*time.Second)
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("deadline exceeded after %s, before progressDeadlineSeconds", took)
	}
	h.ExpectEvent("ProgressDeadlineExceeded", h.Prefix+"web")
	if c := h.condition("web", v1alpha1.AvailableCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Available %+v: the old Machines still serve", c)
	}
	if byClass := liveByClass(h.machines("web")); byClass["v1"] != 2 || byClass["broken"] != 1 {
		t.Errorf("machines %v: want the 2 old ones kept, 1 new surged", byClass)
	}

	// Undo: back to revision 1's template.
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.RollbackTo = &v1alpha1.RollbackConfig{} })
	h.Eventually(10*time.Second, "the template rolled back", func() (bool, error) {
		md := h.md("web")
		return md.Spec.RollbackTo == nil && md.Spec.Template.Spec.Class.Name == "v1", nil
	})
	h.ExpectEvent("RolledBack", h.Prefix+"web")
	md := h.waitComplete("web", 60*time.Second)
	if _, ok := md.Spec.Template.Metadata.Labels[v1alpha1.TemplateHashLabel]; ok {
		t.Errorf("the rolled-back template carries the hash label: %v", md.Spec.Template.Metadata.Labels)
	}
	sets := h.setsByRevision("web")
	if ms, ok := sets[3]; !ok || ms.Spec.Template.Spec.Class.Name != "v1" || ms.Spec.Replicas != 2 {
		t.Errorf("sets %v: want the v1 set renumbered to revision 3", summary(sets))
	}
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionTrue, "NewMachineSetAvailable", 10*time.Second)

	// A revision that does not exist: cleared, with a Warning.
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.RollbackTo = &v1alpha1.RollbackConfig{Revision: 42} })
	h.Eventually(10*time.Second, "rollbackTo cleared", func() (bool, error) {
		return h.md("web").Spec.RollbackTo == nil, nil
	})
	h.ExpectEvent("RollbackRevisionNotFound", h.Prefix+"web")
	if md := h.md("web"); md.Spec.Template.Spec.Class.Name != "v1" {
		t.Errorf("template class %q after a failed rollback", md.Spec.Template.Spec.Class.Name)
	}
}
