package machinedeployment_test

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// slowSpec boots a VM in 300ms, so a rollout has states to observe.
const slowSpec = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"300ms"}`

func TestRollingUpdateStaysWithinBounds(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", slowSpec)
	h.Class("v2", slowSpec)
	h.deployment("web", 10, "v1", func(md *v1alpha1.MachineDeployment) { md.Spec.Strategy = rolling("2", "0") })
	h.waitComplete("web", 90*time.Second)

	w := h.watch("web", func(ms []v1alpha1.Machine) string {
		avail := 0
		for i := range ms {
			if available(&ms[i]) {
				avail++
			}
		}
		switch {
		case len(ms) > 12:
			return fmt.Sprintf("%d Machines exist, above replicas + maxSurge = 12", len(ms))
		case avail < 10:
			return fmt.Sprintf("%d Machines available, below replicas − maxUnavailable = 10", avail)
		}
		return ""
	})
	h.update("web", useClass("v2"))
	md := h.waitComplete("web", 180*time.Second)
	w.finish(t)

	sets := h.setsByRevision("web")
	if len(sets) != 2 || sets[1].Spec.Replicas != 0 || sets[2].Spec.Replicas != 10 || sets[2].Spec.Template.Spec.Class.Name != "v2" {
		t.Errorf("sets after the rollout: %v", summary(sets))
	}
	if md.Annotations[v1alpha1.RevisionAnnotation] != "2" {
		t.Errorf("deployment revision %q, want 2", md.Annotations[v1alpha1.RevisionAnnotation])
	}
	h.ExpectEvent("ScalingMachineSet", md.Name)
}

// TestRollingUpdateTerminationStarted: a Machine being deleted no longer
// counts against maxSurge, so at most replicas + maxSurge Machines that
// are not being deleted exist; availability holds as with the default.
func TestRollingUpdateTerminationStarted(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", slowSpec)
	h.Class("v2", slowSpec)
	h.deployment("web", 6, "v1", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Strategy = rolling("2", "0")
		md.Spec.Strategy.RollingUpdate.ReplacementPolicy = v1alpha1.TerminationStarted
	})
	h.waitComplete("web", 90*time.Second)

	w := h.watch("web", func(ms []v1alpha1.Machine) string {
		live, avail := 0, 0
		for i := range ms {
			if ms[i].DeletionTimestamp.IsZero() {
				live++
			}
			if available(&ms[i]) {
				avail++
			}
		}
		switch {
		case live > 8:
			return fmt.Sprintf("%d Machines not being deleted, above replicas + maxSurge = 8", live)
		case avail < 6:
			return fmt.Sprintf("%d Machines available, below replicas − maxUnavailable = 6", avail)
		}
		return ""
	})
	h.update("web", useClass("v2"))
	h.waitComplete("web", 180*time.Second)
	w.finish(t)
	if sets := h.setsByRevision("web"); len(sets) != 2 || sets[1].Spec.Replicas != 0 || sets[2].Spec.Replicas != 6 {
		t.Errorf("sets after the rollout: %v", summary(sets))
	}
}

func TestRecreate(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", slowSpec)
	h.Class("v2", slowSpec)
	h.deployment("web", 3, "v1", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Strategy = v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.RecreateStrategy}
	})
	h.waitComplete("web", 60*time.Second)

	// Never a new Machine while an old one exists, even one being deleted.
	w := h.watch("web", func(ms []v1alpha1.Machine) string {
		classes := map[string]int{}
		for _, m := range ms {
			classes[m.Spec.Class.Name]++
		}
		if classes["v1"] > 0 && classes["v2"] > 0 {
			return fmt.Sprintf("old and new Machines at once: %v", classes)
		}
		return ""
	})
	h.update("web", useClass("v2"))
	h.waitComplete("web", 90*time.Second)
	w.finish(t)
	if sets := h.setsByRevision("web"); len(sets) != 2 || sets[2].Spec.Replicas != 3 {
		t.Errorf("sets after the rollout: %v", summary(sets))
	}
}

func TestOnDelete(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", controllertest.SimSpec)
	h.Class("v2", controllertest.SimSpec)
	h.deployment("web", 3, "v1", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Strategy = v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.OnDeleteStrategy}
	})
	h.waitComplete("web", 60*time.Second)
	old := h.machines("web")

	h.update("web", useClass("v2"))
	h.Eventually(10*time.Second, "the new MachineSet, empty", func() (bool, error) {
		sets := h.setsByRevision("web")
		return len(sets) == 2 && sets[2].Spec.Replicas == 0, nil
	})
	h.Consistently(2*time.Second, "no Machine replaced without a deletion", func() (bool, error) {
		return sameNames(h.machines("web"), old) && h.setsByRevision("web")[1].Spec.Replicas == 3, nil
	})

	// A person deletes one old Machine: its replacement is a new one.
	if err := controllertest.Env.Client.Delete(ctx, &old[0]); err != nil {
		t.Fatal(err)
	}
	h.Eventually(60*time.Second, "one new Machine in place of the deleted one", func() (bool, error) {
		sets := h.setsByRevision("web")
		byClass := liveByClass(h.machines("web"))
		return sets[1].Spec.Replicas == 2 && sets[2].Spec.Replicas == 1 &&
			byClass["v1"] == 2 && byClass["v2"] == 1 && len(h.machines("web")) == 3, nil
	})
	h.Consistently(2*time.Second, "the other old Machines kept", func() (bool, error) {
		byClass := liveByClass(h.machines("web"))
		return byClass["v1"] == 2 && byClass["v2"] <= 1, nil
	})

	for _, m := range old[1:] {
		if err := controllertest.Env.Client.Delete(ctx, &m); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	h.waitComplete("web", 60*time.Second)
	if sets := h.setsByRevision("web"); sets[1].Spec.Replicas != 0 || sets[2].Spec.Replicas != 3 {
		t.Errorf("sets after the rollout: %v", summary(sets))
	}
}

func liveByClass(ms []v1alpha1.Machine) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		if m.DeletionTimestamp.IsZero() {
			out[m.Spec.Class.Name]++
		}
	}
	return out
}

func sameNames(a, b []v1alpha1.Machine) bool {
	names := map[string]bool{}
	for _, m := range a {
		names[m.Name] = true
	}
	for _, m := range b {
		if !names[m.Name] {
			return false
		}
	}
	return len(a) == len(b)
}

func summary(sets map[int]v1alpha1.MachineSet) string {
	s := ""
	for rev, ms := range sets {
		s += fmt.Sprintf(" rev %d %s: %d (%s)", rev, ms.Name, ms.Spec.Replicas, ms.Spec.Template.Spec.Class.Name)
	}
	return s
}
