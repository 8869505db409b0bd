package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The sim classes of the in-place scenarios: the same VMs, tagged
// differently (a running VM takes new tags: applied in place), booting
// another image (a running VM cannot change it: the driver refuses), or
// whose updates fail (faults.update).
const (
	teamA        = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s","bootJitter":"1s","tags":{"team":"a"}}`
	teamB        = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s","bootJitter":"1s","tags":{"team":"b"}}`
	teamC        = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s","bootJitter":"1s","tags":{"team":"c"}}`
	otherImage   = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s","bootJitter":"1s","tags":{"team":"a"},"image":"other-os"}`
	failingTeamB = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s","bootJitter":"1s","tags":{"team":"b"},"faults":{"update":{"code":"Internal"}}}`
)

// TestInPlaceUpdate proves an Auto in-place update of 4 Machines to a
// class their VMs can take while running, under a workload whose
// PodDisruptionBudget keeps 6 of 8 pods: at every observed state at most
// one Machine is unavailable (cordoned, draining, updating or not Ready)
// and never more than 4 exist; every Machine keeps its name, VM and
// providerID, ends in the new MachineSet with the new class and an
// uncordoned Node, and its VM carries the new tags.
func TestInPlaceUpdate(t *testing.T) {
	const replicas = 4
	s, fleet := newInPlaceScenario(t, "inplace", replicas, v1alpha1.InPlaceAuto, "team-a", teamA, "team-b", teamB)
	before := providerIDs(fleet)
	s.createWorkload(8, 6)
	rec := s.record(budgetKept(6), withinInPlaceBounds(replicas, replicas, 1))

	s.rollTo("team-b")
	after := s.waitFleet(replicas, "team-b", 4*time.Minute)
	s.waitWorkload(8, 2*time.Minute)
	rec.verify()
	if got := providerIDs(after); !maps.Equal(before, got) {
		t.Errorf("the Machines' VMs changed: before %v, after %v", before, got)
	}
	s.checkMovedInPlace(after)
	vms, err := s.vms()
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms {
		if vm.Tags["team"] != "b" || vm.ClassName != "team-b" {
			t.Errorf("VM %s of %s: class %q, tags %v; want team-b's tags", vm.ID, vm.MachineName, vm.ClassName, vm.Tags)
		}
	}
	s.checkNoDuplicateVMs()
}

// TestInPlaceRefusedIsReplaced: a new image cannot be put on a running VM;
// the sim's driver refuses the update (FailedPrecondition) and each
// Machine is replaced instead, one at a time, with an Event saying why.
func TestInPlaceRefusedIsReplaced(t *testing.T) {
	const replicas = 3
	s, fleet := newInPlaceScenario(t, "inplace-refused", replicas, v1alpha1.InPlaceAuto, "team-a", teamA, "other-image", otherImage)
	before := providerIDs(fleet)
	// A refused Machine is deleted beside its replacement: one more at most.
	rec := s.record(withinInPlaceBounds(replicas, replicas+1, 1))

	s.rollTo("other-image")
	after := s.waitFleet(replicas, "other-image", 4*time.Minute)
	rec.verify()
	for name, id := range providerIDs(after) {
		if _, kept := before[name]; kept {
			t.Errorf("Machine %s (%s) was kept; its update should have been refused and the Machine replaced", name, id)
		}
	}
	s.waitEvent(s.ns, "InPlaceUpdateRefused", "")
	s.checkNoDuplicateVMs()
}

// TestInPlaceManualCanary: with Manual orchestration nothing moves until a
// person selects a Machine; the canary (selected on the Machine) is
// updated alone, then a second one selected on its Node, then the rest.
func TestInPlaceManualCanary(t *testing.T) {
	const replicas = 3
	s, fleet := newInPlaceScenario(t, "inplace-manual", replicas, v1alpha1.InPlaceManual, "team-a", teamA, "team-b", teamB)
	rec := s.record(withinInPlaceBounds(replicas, replicas, 1))

	s.rollTo("team-b")
	s.consistently(5*time.Second, "no Machine updated before one is selected", func() error {
		return s.classesAre(map[string]string{fleet[0].Name: "team-a", fleet[1].Name: "team-a", fleet[2].Name: "team-a"})
	})

	s.labelMachine(fleet[0].Name, v1alpha1.UpdateSelectedLabel, "true")
	s.eventually(2*time.Minute, "the canary updated alone", func() (bool, error) {
		err := s.classesAre(map[string]string{fleet[0].Name: "team-b", fleet[1].Name: "team-a", fleet[2].Name: "team-a"})
		return err == nil, err
	})
	s.consistently(3*time.Second, "the others left alone", func() error {
		return s.classesAre(map[string]string{fleet[0].Name: "team-b", fleet[1].Name: "team-a", fleet[2].Name: "team-a"})
	})

	s.labelNode(nodeOf(&fleet[1]), v1alpha1.UpdateSelectedLabel, "true")
	s.eventually(2*time.Minute, "the Machine selected on its Node updated", func() (bool, error) {
		err := s.classesAre(map[string]string{fleet[0].Name: "team-b", fleet[1].Name: "team-b", fleet[2].Name: "team-a"})
		return err == nil, err
	})

	s.labelMachine(fleet[2].Name, v1alpha1.UpdateSelectedLabel, "true")
	after := s.waitFleet(replicas, "team-b", 2*time.Minute)
	rec.verify()
	s.checkMovedInPlace(after)
}

// TestInPlaceFailureStopsRollout: an update that fails (the sim's
// faults.update) leaves its Machine cordoned in the old set with
// status Failed, and with maxFailed 0 no other Machine starts; the
// Progressing condition says why. After the fix (a template that works,
// and the failed Machine's target annotation removed, as the docs say)
// the rollout continues and ends with every Machine updated in place.
func TestInPlaceFailureStopsRollout(t *testing.T) {
	const replicas = 3
	s, fleet := newInPlaceScenario(t, "inplace-failed", replicas, v1alpha1.InPlaceAuto, "team-a", teamA, "failing", failingTeamB, "team-c", teamC)
	before := providerIDs(fleet)
	rec := s.record(withinInPlaceBounds(replicas, replicas, 1))

	s.rollTo("failing")
	var failed *v1alpha1.Machine
	s.eventually(2*time.Minute, "an in-place update to fail", func() (bool, error) {
		ms, err := s.machines()
		for i := range ms {
			if u := ms[i].Status.InPlaceUpdate; u != nil && u.Phase == v1alpha1.InPlaceFailed {
				failed = &ms[i]
			}
		}
		return failed != nil, err
	})
	s.eventually(time.Minute, "Progressing to say the rollout stopped", func() (bool, error) {
		md := s.deployment()
		c := meta.FindStatusCondition(md.Status.Conditions, v1alpha1.ProgressingCondition)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, failed.Name) {
			return false, fmt.Errorf("Progressing is %+v", c)
		}
		return true, nil
	})
	s.consistently(5*time.Second, "no other Machine started and the failed one kept cordoned", func() error {
		ms, err := s.machines()
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Name != failed.Name && m.Annotations[v1alpha1.InPlaceTargetAnnotation] != "" {
				return fmt.Errorf("Machine %s was started after the failure", m.Name)
			}
		}
		node := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(failed)}, node); err != nil {
			return err
		}
		if !node.Spec.Unschedulable {
			return fmt.Errorf("the failed Machine's Node %s is not cordoned", node.Name)
		}
		return nil
	})

	s.rollTo("team-c")
	s.annotateMachine(failed.Name, v1alpha1.InPlaceTargetAnnotation, nil)
	after := s.waitFleet(replicas, "team-c", 4*time.Minute)
	rec.verify()
	if got := providerIDs(after); !maps.Equal(before, got) {
		t.Errorf("the Machines' VMs changed: before %v, after %v", before, got)
	}
	s.checkMovedInPlace(after)
}

// newInPlaceScenario starts a sim scenario with the classes given as
// name, providerSpec pairs and a MachineDeployment of replicas Machines of
// the first one with strategy InPlace (maxUnavailable 1, maxFailed 0), and
// waits for its fleet.
func newInPlaceScenario(t *testing.T, name string, replicas int32, orchestration v1alpha1.InPlaceOrchestration, classes ...string) (*scenario, []v1alpha1.Machine) {
	t.Helper()
	s := newScenario(t, name)
	s.startManager()
	for i := 0; i+1 < len(classes); i += 2 {
		s.createClass(classes[i], classes[i+1])
	}
	s.createDeployment(replicas, classes[0], 1, 0)
	s.createInPlaceStrategy(orchestration, 0)
	return s, s.waitFleet(int(replicas), classes[0], 3*time.Minute)
}

// withinInPlaceBounds is the invariant of an in-place update of replicas
// Machines: never more than most Machines (not failed) exist, and at least
// replicas − maxUnavailable of them serve: Ready, not being deleted, not
// being updated (draining, updating, waiting for its node) and not on a
// cordoned Node. A refused Machine being replaced and its replacement
// not yet Ready take one slot between them: the replacement is extra.
func withinInPlaceBounds(replicas, most, maxUnavailable int) check {
	return func(r *recorder) string {
		var objects int
		var serving []string
		for _, m := range r.machinesLocked() {
			if m.Status.FailureReason != "" {
				continue
			}
			objects++
			if machineAvailable(m) && !updating(m) && !r.cordonedLocked(nodeOf(m)) {
				serving = append(serving, m.Name)
			}
		}
		switch {
		case objects > most:
			return fmt.Sprintf("%d Machines exist, more than %d", objects, most)
		case len(serving) < replicas-maxUnavailable:
			return fmt.Sprintf("only %d Machines serve (%v), fewer than %d − maxUnavailable %d", len(serving), serving, replicas, maxUnavailable)
		}
		return ""
	}
}

// updating: the Machine's in-place update is under way.
func updating(m *v1alpha1.Machine) bool {
	u := m.Status.InPlaceUpdate
	return u != nil && (u.Phase == v1alpha1.InPlaceDraining || u.Phase == v1alpha1.InPlaceUpdating || u.Phase == v1alpha1.InPlaceWaitingForNode)
}

// cordonedLocked: the recorder saw the Node cordoned.
func (r *recorder) cordonedLocked(node string) bool {
	n, ok := r.objs[kindNode][node].(*corev1.Node)
	return ok && n.Spec.Unschedulable
}

// providerIDs maps each Machine to its providerID.
func providerIDs(ms []v1alpha1.Machine) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		out[m.Name] = m.Spec.ProviderID
	}
	return out
}

// checkMovedInPlace checks that every Machine was moved into the
// deployment's newest MachineSet (its controller owner and template hash),
// that none still carries an in-place target, and that no Node is left
// cordoned.
func (s *scenario) checkMovedInPlace(ms []v1alpha1.Machine) {
	s.t.Helper()
	sets := &v1alpha1.MachineSetList{}
	if err := k8s.List(context.Background(), sets, client.InNamespace(s.ns)); err != nil {
		s.t.Fatal(err)
	}
	md := s.deployment()
	var newest *v1alpha1.MachineSet
	for i := range sets.Items {
		if sets.Items[i].Annotations[v1alpha1.RevisionAnnotation] == md.Annotations[v1alpha1.RevisionAnnotation] {
			newest = &sets.Items[i]
		}
	}
	if newest == nil {
		s.t.Fatalf("no MachineSet has the deployment's revision %q", md.Annotations[v1alpha1.RevisionAnnotation])
	}
	for _, m := range ms {
		owner := metav1.GetControllerOf(&m)
		if owner == nil || owner.Name != newest.Name {
			s.t.Errorf("Machine %s is controlled by %v, not by the newest MachineSet %s", m.Name, owner, newest.Name)
		}
		if m.Labels[v1alpha1.TemplateHashLabel] != newest.Labels[v1alpha1.TemplateHashLabel] {
			s.t.Errorf("Machine %s has template hash %q, the newest set %q", m.Name, m.Labels[v1alpha1.TemplateHashLabel], newest.Labels[v1alpha1.TemplateHashLabel])
		}
		if t := m.Annotations[v1alpha1.InPlaceTargetAnnotation]; t != "" {
			s.t.Errorf("Machine %s still has the in-place target %s", m.Name, t)
		}
		node := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(&m)}, node); err != nil {
			s.t.Fatal(err)
		}
		if node.Spec.Unschedulable {
			s.t.Errorf("Node %s of %s is left cordoned", node.Name, m.Name)
		}
	}
	for _, set := range sets.Items {
		for _, key := range []string{v1alpha1.InPlaceMovingInAnnotation, v1alpha1.InPlaceMovingOutAnnotation} {
			if v := set.Annotations[key]; v != "" {
				s.t.Errorf("MachineSet %s still lists %s=%s", set.Name, key, v)
			}
		}
	}
}

// classesAre checks each named Machine's class.
func (s *scenario) classesAre(want map[string]string) error {
	ms, err := s.machines()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if w, ok := want[m.Name]; ok && (m.Spec.Class == nil || m.Spec.Class.Name != w) {
			return fmt.Errorf("Machine %s is of class %v, want %s", m.Name, m.Spec.Class, w)
		}
	}
	return nil
}

func (s *scenario) deployment() *v1alpha1.MachineDeployment {
	s.t.Helper()
	md := &v1alpha1.MachineDeployment{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: s.ns}, md); err != nil {
		s.t.Fatal(err)
	}
	return md
}

// labelMachine and labelNode set a label, as a person would with kubectl.
func (s *scenario) labelMachine(name, key, value string) {
	s.t.Helper()
	s.mergePatch(&v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}}, "labels", key, &value)
}

func (s *scenario) labelNode(name, key, value string) {
	s.t.Helper()
	s.mergePatch(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, "labels", key, &value)
}

// mergePatch sets (or, with nil, removes) one label or annotation
// (field) of obj, as a person would with kubectl.
func (s *scenario) mergePatch(obj client.Object, field, key string, value *string) {
	s.t.Helper()
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{field: map[string]*string{key: value}}})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		s.t.Fatalf("patching the %s of %s: %v", field, obj.GetName(), err)
	}
}
