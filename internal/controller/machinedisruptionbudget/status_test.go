package machinedisruptionbudget_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// TestStatusFollowsTheMachines: the counts, across two pools (a budget is
// not bound to one deployment), and the DisruptionAllowed condition as a
// Machine fails and the budget is used up.
func TestStatusFollowsTheMachines(t *testing.T) {
	ns := start(t)
	cluster := map[string]string{"cluster": "prod"}
	var ms []*v1alpha1.Machine
	for i, p := range []string{"a", "a", "b", "b"} {
		ms = append(ms, machine(t, ns, "m"+string(rune('0'+i)), map[string]string{"cluster": "prod", "pool": p}, true))
	}
	machine(t, ns, "other", map[string]string{"cluster": "dev"}, false)
	budget(t, ns, "prod", cluster, intstr.FromString("50%"))

	want := "expected 4 max 2 unavailable 0 allowed 2"
	b := waitStatus(t, ns, "prod", want, func(b *v1alpha1.MachineDisruptionBudget) bool { return counts(b) == want })
	if c := condition(b, v1alpha1.DisruptionAllowedCondition); c == nil || c.Status != "True" || c.Reason != disruption.ReasonDisruptionsAllowed {
		t.Errorf("condition %+v, want DisruptionAllowed True", c)
	}

	// Failures count: two Nodes down use the budget up.
	setReady(t, ms[0], false)
	setReady(t, ms[2], false)
	want = "expected 4 max 2 unavailable 2 allowed 0"
	b = waitStatus(t, ns, "prod", want, func(b *v1alpha1.MachineDisruptionBudget) bool { return counts(b) == want })
	c := condition(b, v1alpha1.DisruptionAllowedCondition)
	if c == nil || c.Status != "False" || c.Reason != disruption.ReasonBudgetExhausted ||
		!strings.Contains(c.Message, "m0 not Ready") || !strings.Contains(c.Message, "m2 not Ready") {
		t.Errorf("condition %+v, want DisruptionAllowed False BudgetExhausted naming m0 and m2", c)
	}
}

// TestBudgetSelectingNothingSaysSo: a selector matching no Machine (a typo)
// is reported, not silently obeyed.
func TestBudgetSelectingNothingSaysSo(t *testing.T) {
	ns := start(t)
	machine(t, ns, "m", pool("web"), true)
	budget(t, ns, "typo", pool("wbe"), intstr.FromInt32(1))
	waitStatus(t, ns, "typo", "NoMachinesSelected", func(b *v1alpha1.MachineDisruptionBudget) bool {
		c := condition(b, v1alpha1.DisruptionAllowedCondition)
		return c != nil && c.Status == "False" && c.Reason == disruption.ReasonNoMachinesSelected &&
			strings.Contains(c.Message, "selects no Machine")
	})
}

// TestOverlappingBudgetsAreReported: budgets sharing Machines each say so,
// naming the other.
func TestOverlappingBudgetsAreReported(t *testing.T) {
	ns := start(t)
	machine(t, ns, "m", map[string]string{"cluster": "prod", "pool": "a"}, true)
	machine(t, ns, "n", map[string]string{"pool": "b"}, true)
	budget(t, ns, "cluster", map[string]string{"cluster": "prod"}, intstr.FromInt32(1))
	budget(t, ns, "pool-a", pool("a"), intstr.FromInt32(1))
	budget(t, ns, "pool-b", pool("b"), intstr.FromInt32(1))
	for name, other := range map[string]string{"cluster": "pool-a", "pool-a": "cluster"} {
		waitStatus(t, ns, name, name+" Overlapping "+other, func(b *v1alpha1.MachineDisruptionBudget) bool {
			c := condition(b, v1alpha1.OverlappingCondition)
			return c != nil && c.Status == "True" && strings.Contains(c.Message, other) && !strings.Contains(c.Message, "pool-b")
		})
	}
	waitStatus(t, ns, "pool-b", "pool-b not Overlapping", func(b *v1alpha1.MachineDisruptionBudget) bool {
		c := condition(b, v1alpha1.OverlappingCondition)
		return c != nil && c.Status == "False"
	})
}
