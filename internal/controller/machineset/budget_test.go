package machineset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// holdFinalizer keeps a deleted Machine in the API (being deleted, so
// unavailable) until the test removes it.
const holdFinalizer = "test.millwright.dev/hold"

func budget(h *controllertest.Harness, name, set string, maxUnavailable int32) {
	h.T.Helper()
	h.Create(&v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{
			Selector:       v1alpha1.LabelSelector{MatchLabels: map[string]string{"set": set}},
			MaxUnavailable: intstr.FromInt32(maxUnavailable),
		},
	})
}

func getBudget(h *controllertest.Harness, name string) *v1alpha1.MachineDisruptionBudget {
	h.T.Helper()
	b := &v1alpha1.MachineDisruptionBudget{}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: name}, b); err != nil {
		h.T.Fatal(err)
	}
	return b
}

// editMachine patches m on its latest version: the finalizer list is
// written whole, and the machine controller changes it too.
func editMachine(h *controllertest.Harness, m *v1alpha1.Machine, edit func(*v1alpha1.Machine)) {
	h.T.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &v1alpha1.Machine{}
		if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(m), cur); err != nil {
			return err
		}
		p := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		edit(cur)
		return controllertest.Env.Client.Patch(context.Background(), cur, p)
	})
	if client.IgnoreNotFound(err) != nil {
		h.T.Fatal(err)
	}
}

func waiting(m *v1alpha1.Machine, kind v1alpha1.DisruptionKind) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == disruption.ReasonWaitingForBudget &&
		strings.HasPrefix(c.Message, string(kind)+" waits for MachineDisruptionBudget")
}

// Under a budget of one, a scale-down by two deletes one victim and the
// second waits — told so on the Machine, on the set's DisruptionAllowed
// condition, in an Event and on the budget — until the first is gone.
func TestScaleDownWaitsForTheDisruptionBudget(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 3, "small", nil)
	waitReady(h, "pool", 3, 60*time.Second)
	for _, m := range machinesOf(h, "pool") {
		editMachine(h, &m, func(m *v1alpha1.Machine) { m.Finalizers = append(m.Finalizers, holdFinalizer) })
	}
	budget(h, "pool", "pool", 1)
	h.Eventually(30*time.Second, "the budget to allow one disruption", func() (bool, error) {
		b := getBudget(h, "pool")
		return b.Status.ExpectedMachines == 3 && b.Status.DisruptionsAllowed == 1, nil
	})

	scaleTo(h, "pool", 1)
	var first, second v1alpha1.Machine
	h.Eventually(60*time.Second, "one victim deleted, the second waiting for the budget", func() (bool, error) {
		var deleting, waits []v1alpha1.Machine
		for _, m := range machinesOf(h, "pool") {
			if !m.DeletionTimestamp.IsZero() {
				deleting = append(deleting, m)
			} else if waiting(&m, v1alpha1.DisruptionScaleDown) {
				waits = append(waits, m)
			}
		}
		if len(deleting) > 1 {
			return false, fmt.Errorf("%d Machines deleted at once under a budget of one", len(deleting))
		}
		if len(deleting) == 1 && len(waits) == 1 {
			first, second = deleting[0], waits[0]
			return true, nil
		}
		return false, nil
	})
	h.Eventually(30*time.Second, "the set to say a deletion waits", func() (bool, error) {
		c := meta.FindStatusCondition(getSet(h, "pool").Status.Conditions, v1alpha1.DisruptionAllowedCondition)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, second.Name), nil
	})
	h.ExpectEvent("WaitingForDisruptionBudget", "pool")
	h.ExpectEvent(disruption.ReasonWaitingForBudget, second.Name)
	h.Eventually(30*time.Second, "the budget to list the waiting Machine", func() (bool, error) {
		w := getBudget(h, "pool").Status.WaitingMachines
		return len(w) == 1 && w[0].Name == second.Name, nil
	})

	// The first one gone frees the budget: the second goes.
	editMachine(h, &first, func(m *v1alpha1.Machine) { m.Finalizers = without(m.Finalizers, holdFinalizer) })
	h.Eventually(60*time.Second, "the second victim deleted once the first is gone", func() (bool, error) {
		m := &v1alpha1.Machine{}
		if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(&second), m); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return !m.DeletionTimestamp.IsZero(), nil
	})
	h.Eventually(30*time.Second, "the set's waiting condition to go", func() (bool, error) {
		return meta.FindStatusCondition(getSet(h, "pool").Status.Conditions, v1alpha1.DisruptionAllowedCondition) == nil, nil
	})
	for _, m := range machinesOf(h, "pool") {
		editMachine(h, &m, func(m *v1alpha1.Machine) { m.Finalizers = without(m.Finalizers, holdFinalizer) })
	}
}

// A budget that allows nothing (a freeze) never holds a failure back: a
// Failed Machine is replaced. A scale-down waits under it, and undoing the
// scale-down gives the wait back (the Machine no longer says it waits).
func TestFreezeHoldsScaleDownButNotFailures(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 2, "small", func(ms *v1alpha1.MachineSet) {
		ms.Spec.Template.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: time.Second}
	})
	waitReady(h, "pool", 2, 60*time.Second)
	budget(h, "freeze", "pool", 0)
	h.Eventually(30*time.Second, "the budget to be counted", func() (bool, error) {
		b := getBudget(h, "freeze")
		return b.Status.ObservedGeneration == b.Generation && b.Status.ExpectedMachines == 2, nil
	})

	broken := machinesOf(h, "pool")[0]
	failNode(h, &broken)
	h.Eventually(60*time.Second, "the failed Machine replaced under the freeze", func() (bool, error) {
		m := &v1alpha1.Machine{}
		err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(&broken), m)
		return client.IgnoreNotFound(err) == nil && (err != nil || !m.DeletionTimestamp.IsZero()), nil
	})
	waitReady(h, "pool", 2, 60*time.Second)

	scaleTo(h, "pool", 1)
	var victim string
	h.Eventually(60*time.Second, "the scale-down to wait for the freeze", func() (bool, error) {
		for _, m := range machinesOf(h, "pool") {
			if m.Name == broken.Name {
				continue // its deletion may still be running
			}
			if !m.DeletionTimestamp.IsZero() {
				return false, fmt.Errorf("Machine %s deleted under a budget of 0", m.Name)
			}
			if waiting(&m, v1alpha1.DisruptionScaleDown) {
				victim = m.Name
			}
		}
		return victim != "", nil
	})
	scaleTo(h, "pool", 2)
	h.Eventually(30*time.Second, "the wait given back once the scale-down is undone", func() (bool, error) {
		for _, m := range machinesOf(h, "pool") {
			if m.Name == victim {
				return meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition) == nil, nil
			}
		}
		return false, fmt.Errorf("Machine %s is gone", victim)
	})
	h.Eventually(30*time.Second, "the set's waiting condition to go", func() (bool, error) {
		return meta.FindStatusCondition(getSet(h, "pool").Status.Conditions, v1alpha1.DisruptionAllowedCondition) == nil, nil
	})
}

func without(list []string, s string) []string {
	var out []string
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}
