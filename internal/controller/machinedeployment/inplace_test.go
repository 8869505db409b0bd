package machinedeployment_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// inPlace is strategy InPlace with maxUnavailable and maxFailed.
func inPlace(orchestration v1alpha1.InPlaceOrchestration, maxUnavailable int, maxFailed int32) func(*v1alpha1.MachineDeployment) {
	return func(md *v1alpha1.MachineDeployment) {
		u := intstr.FromInt(maxUnavailable)
		md.Spec.Strategy = v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.InPlaceStrategy,
			InPlace: &v1alpha1.InPlaceMachineDeployment{Orchestration: orchestration, MaxUnavailable: &u, MaxFailed: ptr.To(maxFailed)}}
	}
}

// The classes the in-place tests move Machines between, on the sim
// (docs/providers/sim.md): tagged differs from SimSpec by its tags only,
// which the sim applies to a running VM; failing would too, but every
// update to it fails for good; narrowed drops zone local-b, which a VM
// there cannot take (refused) and one in local-a can.
const (
	taggedSpec   = `{"region":"local","zones":["local-a","local-b"],"tags":{"team":"payments"}}`
	failingSpec  = `{"region":"local","zones":["local-a","local-b"],"tags":{"team":"x"},"faults":{"update":{"code":"Internal","message":"boom: the hypervisor said no"}}}`
	narrowedSpec = `{"region":"local","zones":["local-a"]}`
)

func useVersion(v string) func(*v1alpha1.MachineDeployment) {
	return func(md *v1alpha1.MachineDeployment) { md.Spec.Template.Spec.Version = v }
}

// names are the Machines' names, sorted.
func names(ms []v1alpha1.Machine) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out
}

// inTransitBound checks, in every state the watcher sees, that the same
// Machines exist as before (none created, none deleted) and that at most
// maxUnavailable carry a target (in transit or failed).
func inTransitBound(before []string, maxUnavailable int) func([]v1alpha1.Machine) string {
	return func(ms []v1alpha1.Machine) string {
		if got := names(ms); !slices.Equal(got, before) {
			return fmt.Sprintf("Machines %v, want the same %v", got, before)
		}
		annotated := 0
		for _, m := range ms {
			if !m.DeletionTimestamp.IsZero() {
				return "Machine " + m.Name + " is being deleted"
			}
			if m.Annotations[v1alpha1.InPlaceTargetAnnotation] != "" {
				annotated++
			}
		}
		if annotated > maxUnavailable {
			return fmt.Sprintf("%d Machines being updated, above maxUnavailable %d", annotated, maxUnavailable)
		}
		return ""
	}
}

// waitListsEmpty waits until no set of the deployment lists a Machine in
// transit: the bookkeeping after the last move.
func (h *harness) waitListsEmpty(name string) {
	h.T.Helper()
	h.Eventually(30*time.Second, "the sets' in-place lists emptied", func() (bool, error) {
		for _, ms := range h.sets(name) {
			if ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation]+ms.Annotations[v1alpha1.InPlaceMovingInAnnotation] != "" {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestInPlaceAutoUpdatesEveryMachine: a class change the driver applies
// to running VMs (tags) updates the three Machines in place, one at a
// time: the same Machines (and VMs, now tagged) end in the new set; every start writes the old set's moving-out list, then the
// new set's moving-in list, then the Machine's target; no set ever creates
// or deletes a Machine.
func TestInPlaceAutoUpdatesEveryMachine(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Class("tagged", taggedSpec)
	h.deployment("web", 3, "small", inPlace(v1alpha1.InPlaceAuto, 1, 0))
	h.waitComplete("web", 90*time.Second)
	before := h.machines("web")
	providerIDs := map[string]string{}
	for _, m := range before {
		providerIDs[m.Name] = m.Spec.ProviderID
	}
	oldSet := h.sets("web")[0].Name

	log := h.writeLog()
	w := h.watch("web", inTransitBound(names(before), 1))
	h.update("web", useClass("tagged"))
	md := h.waitComplete("web", 120*time.Second)
	w.finish(t)
	if t.Failed() {
		log.dump(t)
	}

	h.waitListsEmpty("web")
	sets := h.sets("web")
	newSet := sets[len(sets)-1]
	if newSet.Spec.Replicas != 3 || sets[0].Spec.Replicas != 0 {
		t.Errorf("sets after the update: old %d, new %d", sets[0].Spec.Replicas, newSet.Spec.Replicas)
	}
	for _, m := range h.machines("web") {
		if providerIDs[m.Name] != m.Spec.ProviderID || m.Spec.Class.Name != "tagged" || metav1.GetControllerOf(&m).Name != newSet.Name {
			t.Errorf("Machine %s after the update: providerID %s (was %s), class %s, owner %s", m.Name, m.Spec.ProviderID,
				providerIDs[m.Name], m.Spec.Class.Name, metav1.GetControllerOf(&m).Name)
		}
		if vms := h.Sim.Cloud().MachineVMs(h.NS, m.Name); len(vms) != 1 || vms[0].Tags["team"] != "payments" || vms[0].Updates != 1 {
			t.Errorf("Machine %s: VMs %+v; want its one VM updated once, tagged", m.Name, vms)
		}
	}
	if n := len(h.Sim.Cloud().History()); n != 3 {
		t.Errorf("%d VMs were ever created for 3 Machines", n)
	}
	started := log.started()
	if !slices.Equal(slices.Sorted(slices.Values(started)), names(before)) {
		t.Errorf("updates started: %v, want each of %v once", started, names(before))
	}
	for _, m := range started {
		out := log.first(listed(oldSet, v1alpha1.InPlaceMovingOutAnnotation, m))
		in := log.first(listed(newSet.Name, v1alpha1.InPlaceMovingInAnnotation, m))
		target := log.first(targeted(m, newSet.Name))
		if out == 0 || in <= out || target <= in {
			t.Errorf("%s: writes at moving-out %d, moving-in %d, target %d: want them in this order", m, out, in, target)
		}
	}
	if c := h.condition("web", v1alpha1.ProgressingCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Progressing %+v", c)
	}
	h.ExpectEvent("InPlaceUpdate", md.Name)
}

// TestInPlaceFailureStopsTheRollout: a version change, which the Nodes'
// agents apply (the test plays them: the first Machine's fails, once);
// with maxFailed 0 the first failure stops the update: the failed Machine is given back to its old set (the
// new set's write first), Progressing turns False naming it, nothing new
// starts; once a person removes its target annotation (a retry) the
// update continues and completes.
func TestInPlaceFailureStopsTheRollout(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.deployment("web", 3, "small", inPlace(v1alpha1.InPlaceAuto, 2, 0))
	h.waitComplete("web", 90*time.Second)
	oldSet := h.sets("web")[0].Name

	var failed string
	log := h.writeLog()
	agent := h.nodeAgent(func(machine string, attempt int) bool {
		if failed == "" {
			failed = machine
		}
		return machine != failed || attempt > 1
	})
	h.update("web", useVersion("v1.31.0"))
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionFalse, "InPlaceUpdateFailed", 60*time.Second)
	agent.mu.Lock()
	failed = failed + ""
	agent.mu.Unlock()
	c := h.condition("web", v1alpha1.ProgressingCondition)
	if !strings.Contains(c.Message, failed) || !strings.Contains(c.Message, "boom") || !strings.Contains(c.Message, "maxFailed 0") {
		t.Errorf("Progressing message %q does not say which Machine failed and why", c.Message)
	}
	sets := h.sets("web")
	newSet := sets[len(sets)-1].Name
	h.Eventually(30*time.Second, "the failed Machine given back to its set", func() (bool, error) {
		for _, ms := range h.sets("web") {
			if strings.Contains(ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation]+ms.Annotations[v1alpha1.InPlaceMovingInAnnotation], failed) {
				return false, nil
			}
		}
		return true, nil
	})
	inAt := log.first(listed(newSet, v1alpha1.InPlaceMovingInAnnotation, failed))
	outAt := log.first(listed(oldSet, v1alpha1.InPlaceMovingOutAnnotation, failed))
	inDropped := log.first(unlisted(newSet, v1alpha1.InPlaceMovingInAnnotation, failed, inAt))
	outDropped := log.first(unlisted(oldSet, v1alpha1.InPlaceMovingOutAnnotation, failed, outAt))
	if inDropped == 0 || outDropped <= inDropped {
		t.Errorf("given back: new set's moving-in dropped at %d, old set's moving-out at %d; want the new set first", inDropped, outDropped)
	}

	// A reconcile after the failure (a generation change) starts nothing.
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.ProgressDeadlineSeconds = ptr.To[int32](3600) })
	h.Eventually(30*time.Second, "the change observed", func() (bool, error) {
		md := h.md("web")
		return md.Status.ObservedGeneration == md.Generation, nil
	})
	if started := log.started(); len(started) != 2 {
		t.Errorf("updates started: %v; want the first two only (maxUnavailable 2), none after the failure", started)
	}
	m := h.Get(strings.TrimPrefix(failed, h.Prefix))
	if metav1.GetControllerOf(m).Name != oldSet || m.Status.InPlaceUpdate == nil || m.Status.InPlaceUpdate.Phase != v1alpha1.InPlaceFailed {
		t.Errorf("failed Machine %s: owner %s, update %+v", failed, metav1.GetControllerOf(m).Name, m.Status.InPlaceUpdate)
	}
	h.ExpectEvent("InPlaceUpdateFailed", h.Prefix+"web")

	// The retry: the update continues where it stopped.
	h.RemoveAnnotation(strings.TrimPrefix(failed, h.Prefix), v1alpha1.InPlaceTargetAnnotation)
	h.waitComplete("web", 120*time.Second)
	if c := h.condition("web", v1alpha1.ProgressingCondition); c.Status != metav1.ConditionTrue {
		t.Errorf("Progressing after the retry: %+v", c)
	}
}

// TestInPlaceRefusedIsReplaced: a class change dropping a zone: the
// driver applies it to the Machine in the zone kept and refuses it for the
// one in the zone dropped (the sim spreads two Machines over the two
// zones). The refused Machine gets the delete mark; its old set deletes it and the new set creates a
// replacement, the only Machine created. At most replicas Machines that
// are not being deleted exist at any time.
func TestInPlaceRefusedIsReplaced(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Class("narrowed", narrowedSpec)
	h.deployment("web", 2, "small", inPlace(v1alpha1.InPlaceAuto, 1, 0))
	h.waitComplete("web", 90*time.Second)
	before := names(h.machines("web"))
	var refused, kept string
	for _, m := range h.machines("web") {
		if strings.Contains(m.Spec.ProviderID, "/local-b/") {
			refused = m.Name
		} else {
			kept = m.Name
		}
	}
	if refused == "" || kept == "" {
		t.Fatalf("Machines %v: want one in each zone", before)
	}
	keptID := h.Get(strings.TrimPrefix(kept, h.Prefix)).Spec.ProviderID

	w := h.watch("web", func(ms []v1alpha1.Machine) string {
		live := 0
		for _, m := range ms {
			if m.DeletionTimestamp.IsZero() {
				live++
			}
		}
		if live > 2 || len(ms) > 3 {
			return fmt.Sprintf("%d Machines, %d not being deleted: above replicas 2 (+1 refused being replaced)", len(ms), live)
		}
		return ""
	})
	h.update("web", useClass("narrowed"))
	h.waitComplete("web", 120*time.Second)
	w.finish(t)

	after := names(h.machines("web"))
	if slices.Contains(after, refused) {
		t.Errorf("the refused Machine %s is still there: %v", refused, after)
	}
	if !slices.Contains(after, kept) || len(after) != 2 {
		t.Errorf("Machines %v after, %v before: want %s kept and one replacement", after, before, kept)
	}
	if m := h.Get(strings.TrimPrefix(kept, h.Prefix)); m.Spec.ProviderID != keptID || m.Spec.Class.Name != "narrowed" {
		t.Errorf("kept Machine %s: providerID %s (was %s), class %s", kept, m.Spec.ProviderID, keptID, m.Spec.Class.Name)
	}
	h.ExpectEvent("InPlaceUpdateRefused", h.Prefix+"web")
}

// TestInPlaceManualWaitsForSelection: Manual orchestration starts nothing
// until a person selects a Machine; past progressDeadlineSeconds the
// Progressing condition says which label to set; the selected canary is
// then updated and only it.
func TestInPlaceManualWaitsForSelection(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Class("tagged", taggedSpec)
	h.deployment("web", 2, "small", func(md *v1alpha1.MachineDeployment) {
		inPlace(v1alpha1.InPlaceManual, 1, 0)(md)
		md.Spec.ProgressDeadlineSeconds = ptr.To[int32](1)
	})
	h.waitComplete("web", 90*time.Second)
	log := h.writeLog()
	h.update("web", useClass("tagged"))
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionFalse, "ProgressDeadlineExceeded", 60*time.Second)
	if c := h.condition("web", v1alpha1.ProgressingCondition); !strings.Contains(c.Message, v1alpha1.UpdateSelectedLabel+"=true") {
		t.Errorf("Progressing message %q does not name the label to set", c.Message)
	}
	if started := log.started(); len(started) != 0 {
		t.Fatalf("updates started without a selection: %v", started)
	}

	canary := h.machines("web")[0]
	patch := client.MergeFrom(canary.DeepCopy())
	canary.Labels[v1alpha1.UpdateSelectedLabel] = "true"
	if err := controllertest.Env.Client.Patch(ctx, &canary, patch); err != nil {
		t.Fatal(err)
	}
	sets := h.sets("web")
	newSet := sets[len(sets)-1].Name
	h.Eventually(60*time.Second, "the canary moved to the new set", func() (bool, error) {
		m := h.Get(strings.TrimPrefix(canary.Name, h.Prefix))
		return metav1.GetControllerOf(m).Name == newSet && m.Annotations[v1alpha1.InPlaceTargetAnnotation] == "", nil
	})
	h.waitListsEmpty("web")
	if started := log.started(); !slices.Equal(started, []string{canary.Name}) {
		t.Errorf("updates started: %v, want the canary %s only", started, canary.Name)
	}
}

// TestInPlaceNewTemplateRetriesAFailedMachine: after a failure (a class
// whose every update fails) stopped the update, a new template (a class
// that works, the fix) starts it again: the failed Machine's
// stale target is removed and it is updated to the new template with the
// others; no Machine is replaced.
func TestInPlaceNewTemplateRetriesAFailedMachine(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Class("failing", failingSpec)
	h.Class("tagged", taggedSpec)
	h.deployment("web", 2, "small", inPlace(v1alpha1.InPlaceAuto, 1, 0))
	h.waitComplete("web", 90*time.Second)
	before := names(h.machines("web"))

	log := h.writeLog()
	h.update("web", useClass("failing"))
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionFalse, "InPlaceUpdateFailed", 60*time.Second)
	h.update("web", useClass("tagged"))
	h.waitComplete("web", 120*time.Second)
	h.waitListsEmpty("web")

	if after := names(h.machines("web")); !slices.Equal(after, before) {
		t.Errorf("Machines %v after, %v before: want the same, updated in place", after, before)
	}
	started := log.started()
	if len(started) != 3 || started[0] != started[1] && started[0] != started[2] {
		t.Errorf("updates started: %v; want the failed Machine started again, then the other", started)
	}
	for _, m := range h.machines("web") {
		if vms := h.Sim.Cloud().MachineVMs(h.NS, m.Name); m.Spec.Class.Name != "tagged" || len(vms) != 1 || vms[0].Tags["team"] != "payments" {
			t.Errorf("Machine %s of class %s, VMs %+v; want tagged", m.Name, m.Spec.Class.Name, vms)
		}
	}
}
