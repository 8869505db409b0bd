package disruption_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
)

func budget(maxUnavailable intstr.IntOrString, grants ...v1alpha1.DisruptedMachine) *v1alpha1.MachineDisruptionBudget {
	return &v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{
			Selector:       v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
			MaxUnavailable: maxUnavailable,
		},
		Status: v1alpha1.MachineDisruptionBudgetStatus{DisruptedMachines: grants},
	}
}

func grant(name string, at time.Time) v1alpha1.DisruptedMachine {
	return v1alpha1.DisruptedMachine{Name: name, Kind: v1alpha1.DisruptionRollout, GrantedAt: metav1.NewTime(at)}
}

// TestEvaluate: what counts, the base of a percentage, and the grants.
func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	deleting := ready("gone-soon")
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	other := ready("other")
	other.Labels = map[string]string{"pool": "b"}
	otherNS := ready("elsewhere")
	otherNS.Namespace = "ns2"
	preservedFailed := ready("kept")
	preservedFailed.Status.FailureReason = "HealthCheckFailed"
	preservedFailed.Status.Conditions = append(preservedFailed.Status.Conditions,
		metav1.Condition{Type: v1alpha1.PreservedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.PreservedWhenFailedReason})
	waiting := withCondition(ready("waits"), v1alpha1.DisruptionAllowedCondition, metav1.ConditionFalse)
	waiting.Status.Conditions[len(waiting.Status.Conditions)-1].Message = "Rollout waits for MachineDisruptionBudget b"

	machines := []v1alpha1.Machine{
		ready("a1"), ready("a2"), ready("a3"), ready("a4"), waiting,
		withCondition(ready("down"), v1alpha1.ReadyCondition, metav1.ConditionFalse),
		deleting, other, otherNS, preservedFailed,
	}
	for _, tc := range []struct {
		name                           string
		b                              *v1alpha1.MachineDisruptionBudget
		expected, max, unavail, allows int32
		pending                        []string
	}{
		// 6 expected (a1-a4, waits, down; not the one being deleted),
		// 2 unavailable (down, gone-soon).
		{"a number", budget(intstr.FromInt32(3)), 6, 3, 2, 1, nil},
		{"exhausted", budget(intstr.FromInt32(2)), 6, 2, 2, 0, nil},
		{"over, not negative", budget(intstr.FromInt32(1)), 6, 1, 2, 0, nil},
		{"a freeze", budget(intstr.FromInt32(0)), 6, 0, 2, 0, nil},
		{"a percentage rounds up", budget(intstr.FromString("34%")), 6, 3, 2, 1, nil},
		{"100 percent", budget(intstr.FromString("100%")), 6, 6, 2, 4, nil},
		{"a pending grant counts", budget(intstr.FromInt32(3), grant("a1", now.Add(-time.Minute))), 6, 3, 3, 0, []string{"a1"}},
		// down's Node is NotReady: not the rollout starting. The grant
		// stays (the Node may come back before the Machine is deleted),
		// counted once.
		{"a grant of a Machine down for another reason stays, counted once", budget(intstr.FromInt32(3), grant("down", now.Add(-time.Minute))), 6, 3, 2, 1, []string{"down"}},
		{"a grant taken effect ends", budget(intstr.FromInt32(3), grant("gone-soon", now.Add(-time.Minute))), 6, 3, 2, 1, nil},
		{"a grant of a Machine gone ends", budget(intstr.FromInt32(3), grant("deleted-already", now)), 6, 3, 2, 1, nil},
		{"a grant lapses", budget(intstr.FromInt32(3), grant("a1", now.Add(-disruption.GrantTTL))), 6, 3, 2, 1, nil},
		{"a grant of a Machine no longer selected ends", budget(intstr.FromInt32(3), grant("other", now)), 6, 3, 2, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := disruption.Evaluate(tc.b, pointers(machines), nil, now)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Expected != tc.expected || ev.Max != tc.max || ev.Unavailable != tc.unavail || ev.Allowed != tc.allows {
				t.Errorf("expected %d max %d unavailable %d allowed %d, want %d %d %d %d (why: %v)",
					ev.Expected, ev.Max, ev.Unavailable, ev.Allowed, tc.expected, tc.max, tc.unavail, tc.allows, ev.Why)
			}
			var pending []string
			for _, d := range ev.Disrupted {
				pending = append(pending, d.Name)
			}
			if strings.Join(pending, ",") != strings.Join(tc.pending, ",") {
				t.Errorf("pending grants %v, want %v", pending, tc.pending)
			}
			if len(ev.Waiting) != 1 || ev.Waiting[0].Name != "waits" || ev.Waiting[0].Message == "" {
				t.Errorf("waiting %+v, want the Machine waits with its message", ev.Waiting)
			}
		})
	}
}

// TestEvaluateNothingSelected: a budget selecting nothing allows nothing
// (and the controller says so).
func TestEvaluateNothingSelected(t *testing.T) {
	b := budget(intstr.FromString("50%"))
	b.Spec.Selector.MatchLabels = map[string]string{"pool": "typo"}
	ev, err := disruption.Evaluate(b, pointers([]v1alpha1.Machine{ready("a1")}), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ev.Expected != 0 || ev.Allowed != 0 {
		t.Errorf("expected %d allowed %d, want 0 0", ev.Expected, ev.Allowed)
	}
}

// TestEvaluateRefusesWhatAdmissionRefuses: written around admission, a
// budget is reported, not obeyed as if it selected everything.
func TestEvaluateRefusesWhatAdmissionRefuses(t *testing.T) {
	for name, edit := range map[string]func(*v1alpha1.MachineDisruptionBudget){
		"empty selector":          func(b *v1alpha1.MachineDisruptionBudget) { b.Spec.Selector = v1alpha1.LabelSelector{} },
		"negative maxUnavailable": func(b *v1alpha1.MachineDisruptionBudget) { b.Spec.MaxUnavailable = intstr.FromInt32(-1) },
		"malformed maxUnavailable": func(b *v1alpha1.MachineDisruptionBudget) {
			b.Spec.MaxUnavailable = intstr.FromString("two")
		},
		"bad operator": func(b *v1alpha1.MachineDisruptionBudget) {
			b.Spec.Selector.MatchExpressions = []v1alpha1.LabelSelectorRequirement{{Key: "pool", Operator: "Near"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := budget(intstr.FromInt32(1))
			edit(b)
			if _, err := disruption.Evaluate(b, pointers([]v1alpha1.Machine{ready("a1")}), nil, time.Now()); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// TestGrantEndsWithTheEffectOfItsKind: a grant ends when its Machine shows
// the disruption granted, not when it is unavailable for another reason.
func TestGrantEndsWithTheEffectOfItsKind(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	notReady := withCondition(ready("m"), v1alpha1.ReadyCondition, metav1.ConditionFalse)
	external := withCondition(ready("m"), v1alpha1.HealthCheckSucceededCondition, metav1.ConditionFalse)
	external.Status.Conditions[len(external.Status.Conditions)-1].Reason = v1alpha1.ExternalRemediationRequestedReason
	for _, tc := range []struct {
		name  string
		kind  v1alpha1.DisruptionKind
		m     v1alpha1.Machine
		ended bool
	}{
		{"remediation, Node NotReady", v1alpha1.DisruptionRemediation, notReady, false},
		{"remediation, marked", v1alpha1.DisruptionRemediation, withCondition(ready("m"), v1alpha1.OwnerRemediatedCondition, metav1.ConditionFalse), true},
		{"remediation, external object", v1alpha1.DisruptionRemediation, external, true},
		{"in-place, Node NotReady", v1alpha1.DisruptionInPlaceUpdate, notReady, false},
		{"in-place, Draining", v1alpha1.DisruptionInPlaceUpdate, targeted(inPlace(ready("m"), v1alpha1.InPlaceDraining)), true},
		{"rollout, marked by a health check", v1alpha1.DisruptionRollout, withCondition(ready("m"), v1alpha1.OwnerRemediatedCondition, metav1.ConditionFalse), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := grant("m", now.Add(-time.Second))
			g.Kind = tc.kind
			ev, err := disruption.Evaluate(budget(intstr.FromInt32(1), g), pointers([]v1alpha1.Machine{tc.m}), nil, now)
			if err != nil {
				t.Fatal(err)
			}
			if ended := len(ev.Disrupted) == 0; ended != tc.ended {
				t.Errorf("grant ended = %v, want %v", ended, tc.ended)
			}
			if ev.Unavailable != 1 {
				t.Errorf("unavailable %d, want 1 (counted once)", ev.Unavailable)
			}
		})
	}
}

// TestOverlapping: the other budgets selecting a Machine the budget
// selects, each named once, sorted; not itself, not one of another
// namespace, not one whose selector does not parse, not one whose
// Machines the budget does not select.
func TestOverlapping(t *testing.T) {
	b := budget(intstr.FromInt32(1)) // "b" over pool=a in ns
	other := func(name, ns string, labels map[string]string) v1alpha1.MachineDisruptionBudget {
		o := budget(intstr.FromInt32(1))
		o.Name, o.Namespace, o.Spec.Selector.MatchLabels = name, ns, labels
		return *o
	}
	broken := other("broken", "ns", map[string]string{"pool": "a"})
	broken.Spec.Selector.MatchExpressions = []v1alpha1.LabelSelectorRequirement{{Key: "pool", Operator: "Sideways"}}
	others := []v1alpha1.MachineDisruptionBudget{
		*b,
		other("zone-x", "ns", map[string]string{"zone": "x"}),
		other("pool-b", "ns", map[string]string{"pool": "b"}),
		other("elsewhere", "other", map[string]string{"pool": "a"}),
		other("all-a", "ns", map[string]string{"pool": "a"}),
		broken,
	}
	a1, a2, b1 := ready("a1"), ready("a2"), ready("b1")
	a1.Labels = map[string]string{"pool": "a", "zone": "x"}
	b1.Labels = map[string]string{"pool": "b", "zone": "x"}
	overlapping := func(b *v1alpha1.MachineDisruptionBudget, others []v1alpha1.MachineDisruptionBudget, machines []*v1alpha1.Machine) []string {
		tally, err := disruption.NewTally(b, others)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range machines {
			tally.Put(m)
		}
		return tally.Overlapping()
	}
	got := overlapping(b, others, pointers([]v1alpha1.Machine{a1, a2, b1}))
	if want := []string{"all-a", "zone-x"}; !slices.Equal(got, want) {
		t.Errorf("overlapping %v, want %v", got, want)
	}
	if got := overlapping(b, others, pointers([]v1alpha1.Machine{a2, b1})); !slices.Equal(got, []string{"all-a"}) {
		t.Errorf("without a1: overlapping %v, want [all-a]", got)
	}
	if got := overlapping(b, []v1alpha1.MachineDisruptionBudget{*b}, pointers([]v1alpha1.Machine{a1})); len(got) != 0 {
		t.Errorf("alone: overlapping %v, want none", got)
	}
}
