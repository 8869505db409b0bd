package machineset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// A Machine cordoned by an in-place update uses its owner's budget even
// while the owner has more Machines than its size: under a budget of one,
// a scale-down's victim waits until the update is cleared. A chaos run
// found one Machine in an in-place update and another drained for a
// scale-down at once under maxUnavailable 1: the set's healthy Machines
// were still its new size, so the budget counted nothing unavailable.
func TestScaleDownWaitsForAnInPlaceUpdate(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 4, "small", nil)
	waitReady(h, "pool", 4, 60*time.Second)
	machines := machinesOf(h, "pool")
	cordoned, victim := machines[0], machines[1]
	// An update to a set that does not exist stops at once (Failed) and
	// keeps the Machine cordoned while its target is annotated.
	editMachine(h, &cordoned, func(m *v1alpha1.Machine) {
		m.Annotations = withKey(m.Annotations, v1alpha1.InPlaceTargetAnnotation, "elsewhere")
	})
	h.Eventually(30*time.Second, "the in-place update to stop", func() (bool, error) {
		m := getMachine(h, cordoned.Name)
		return m != nil && machinefacts.CordonedInPlace(m), nil
	})
	// The victim goes first (the cluster-autoscaler's mark), and stays in
	// the API once deleted, so a deletion is seen.
	editMachine(h, &victim, func(m *v1alpha1.Machine) {
		m.Annotations = withKey(m.Annotations, v1alpha1.DeleteMachineAnnotation, "yes")
		m.Finalizers = append(m.Finalizers, holdFinalizer)
	})
	budget(h, "pool", "pool", 1)
	h.Eventually(30*time.Second, "the budget to count the cordoned Machine", func() (bool, error) {
		b := getBudget(h, "pool")
		return b.Status.ObservedGeneration == b.Generation && b.Status.ExpectedMachines == 4 && b.Status.DisruptionsAllowed == 0, nil
	})

	scaleTo(h, "pool", 3)
	notDeleted := func() (bool, error) {
		m := getMachine(h, victim.Name)
		if m == nil || !m.DeletionTimestamp.IsZero() {
			return false, fmt.Errorf("Machine %s was deleted while Machine %s was cordoned by an in-place update, under a budget of one", victim.Name, cordoned.Name)
		}
		return true, nil
	}
	h.Eventually(60*time.Second, "the budget recounted at the new size, and the victim waiting for it", func() (bool, error) {
		if ok, err := notDeleted(); !ok {
			return false, err
		}
		b := getBudget(h, "pool")
		recounted := b.Status.ObservedGeneration == b.Generation && b.Status.ExpectedMachines == 3
		return recounted && b.Status.DisruptionsAllowed == 0 && waiting(getMachine(h, victim.Name), v1alpha1.DisruptionScaleDown), nil
	})
	h.Consistently(3*time.Second, "the victim to stay", notDeleted)

	// The update cleared, the Machine is available again: the victim goes.
	editMachine(h, &cordoned, func(m *v1alpha1.Machine) { delete(m.Annotations, v1alpha1.InPlaceTargetAnnotation) })
	h.Eventually(60*time.Second, "the victim deleted once the update is cleared", func() (bool, error) {
		m := getMachine(h, victim.Name)
		return m != nil && !m.DeletionTimestamp.IsZero(), nil
	})
	editMachine(h, &victim, func(m *v1alpha1.Machine) { m.Finalizers = without(m.Finalizers, holdFinalizer) })
}

// getMachine reads a Machine of the harness's namespace; nil when gone.
func getMachine(h *controllertest.Harness, name string) *v1alpha1.Machine {
	h.T.Helper()
	m := &v1alpha1.Machine{}
	err := controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: name}, m)
	if err != nil {
		if client.IgnoreNotFound(err) != nil {
			h.T.Fatal(err)
		}
		return nil
	}
	return m
}

// withKey returns the map with key set to value, made if nil.
func withKey(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}
