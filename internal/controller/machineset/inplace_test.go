package machineset_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// setLists writes a set's replicas and in-place lists in one patch, as the
// MachineDeployment controller does.
func setLists(h *controllertest.Harness, name string, replicas int32, out, in string) {
	h.T.Helper()
	ms := getSet(h, name)
	patch := client.MergeFrom(ms.DeepCopy())
	ms.Spec.Replicas = replicas
	if ms.Annotations == nil {
		ms.Annotations = map[string]string{}
	}
	ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation] = out
	ms.Annotations[v1alpha1.InPlaceMovingInAnnotation] = in
	if err := controllertest.Env.Client.Patch(context.Background(), ms, patch); err != nil {
		h.T.Fatal(err)
	}
}

// waitCounted waits until the set's controller has reconciled its latest
// spec and reports replicas and ready: its decision on that spec (create,
// delete or nothing) is made by then, in the same reconcile.
func waitCounted(h *controllertest.Harness, name string, replicas, ready int32) {
	h.T.Helper()
	h.Eventually(30*time.Second, name+" counted", func() (bool, error) {
		ms := getSet(h, name)
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.Replicas == replicas && ms.Status.ReadyReplicas == ready, nil
	})
}

// live names the set's Machines not being deleted, and those being deleted.
func live(h *controllertest.Harness, set string) (alive, deleting []string) {
	for _, m := range machinesOf(h, set) {
		if m.DeletionTimestamp.IsZero() {
			alive = append(alive, m.Name)
		} else {
			deleting = append(deleting, m.Name)
		}
	}
	slices.Sort(alive)
	return alive, deleting
}

// TestInPlaceCounting: a MachineSet counts the Machines it controls, minus
// its moving-out list, plus its moving-in list, so neither set creates nor
// deletes a Machine while one is in transit; a moving-in Machine is ready
// only once its update to this set succeeded; a listed Machine is never a
// scale-down victim. The moves themselves are written here by hand, as the
// machine controller (the executor, docs/in-place-updates.md) writes them.
func TestInPlaceCounting(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "old", 3, "small", nil)
	set(h, "new", 0, "small", nil)
	waitReady(h, "old", 3, 60*time.Second)
	before, _ := live(h, "old")
	m, other := before[0], before[1]

	// (a) the old set lets m go: replicas 2, moving-out m. It deletes nothing.
	setLists(h, "old", 2, m, "")
	waitCounted(h, "old", 2, 2)
	if alive, deleting := live(h, "old"); !slices.Equal(alive, before) || len(deleting) > 0 {
		t.Fatalf("old set after listing %s as moving out: %v, deleting %v; want %v untouched", m, alive, deleting, before)
	}

	// (b) the new set takes it: replicas 1, moving-in m. It creates
	// nothing, and m is not ready for it yet.
	setLists(h, "new", 1, "", m)
	waitCounted(h, "new", 1, 0)
	if alive, _ := live(h, "new"); len(alive) > 0 {
		t.Fatalf("new set created %v for a Machine moving in", alive)
	}

	// The update succeeded: m is ready for the new set.
	mach := &v1alpha1.Machine{}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: m}, mach); err != nil {
		t.Fatal(err)
	}
	base := mach.DeepCopy()
	mach.Status.InPlaceUpdate = &v1alpha1.InPlaceUpdateStatus{TargetSet: "new", Class: "small", Phase: v1alpha1.InPlaceSucceeded}
	if err := controllertest.Env.Client.Status().Patch(context.Background(), mach, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	waitCounted(h, "new", 1, 1)

	// The move: owner and labels of the new set, in one patch. Both sets
	// still list m; each counts it once (the new one as its own).
	base = mach.DeepCopy()
	mach.Labels["set"] = "new"
	mach.Labels[v1alpha1.MachineSetNameLabel] = "new"
	newSet := getSet(h, "new")
	mach.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(newSet, v1alpha1.GroupVersion.WithKind("MachineSet"))}
	if err := controllertest.Env.Client.Patch(context.Background(), mach, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the new set to own the moved Machine", func() (bool, error) {
		ms := getSet(h, "new")
		return ms.Status.FullyLabeledReplicas == 1 && ms.Status.Replicas == 1, nil
	})
	waitCounted(h, "old", 2, 2)
	if alive, deleting := live(h, "new"); !slices.Equal(alive, []string{m}) || len(deleting) > 0 {
		t.Errorf("new set after the move: %v, deleting %v; want only %s", alive, deleting, m)
	}
	if alive, deleting := live(h, "old"); len(alive) != 2 || len(deleting) > 0 {
		t.Errorf("old set after the move: %v, deleting %v", alive, deleting)
	}
	setLists(h, "old", 2, "", "")
	setLists(h, "new", 1, "", "")

	// A scale-down of the old set never takes a listed Machine: with
	// other moving out and replicas 0, the one deleted is the third.
	setLists(h, "old", 0, other, "")
	waitCounted(h, "old", 0, 0)
	h.Eventually(30*time.Second, "the scale-down", func() (bool, error) {
		_, deleting := live(h, "old")
		return len(deleting) == 1 || len(machinesOf(h, "old")) == 1, nil
	})
	alive, _ := live(h, "old")
	if !slices.Equal(alive, []string{other}) {
		t.Errorf("old set kept %v; want the Machine moving out, %s, kept", alive, other)
	}
	if mm := getSet(h, "old"); meta.IsStatusConditionTrue(mm.Status.Conditions, v1alpha1.ReplicaFailureCondition) {
		t.Errorf("old set reports a replica failure: %+v", mm.Status.Conditions)
	}
}
