package plan

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// orderNow is the clock of the tests below.
var orderNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// readyMachine is a Machine Ready for an hour, with annotations.
func readyMachine(name string, annotations map[string]string) *v1alpha1.Machine {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(orderNow.Add(-time.Hour))}}
	return m
}

// unknownMachine is a Machine whose Node went NotReady: phase Unknown.
func unknownMachine(name string) *v1alpha1.Machine {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}}
	m.Status.UnhealthySince = &metav1.Time{Time: orderNow.Add(-time.Minute)}
	m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(orderNow.Add(-time.Minute))}}
	return m
}

var marked = map[string]string{v1alpha1.DeleteMachineAnnotation: "yes"}

// A scale-down deletes a Machine marked with the delete-machine annotation
// (or of a lower delete priority) before the unavailable ones
// (docs/rollout.md, "Which Machines a scale-down takes"). The plan counts
// what the set will delete: removing "the unavailable Machine" of
// {A available and marked, B available, C Unknown} would delete A and
// leave one available Machine under the floor of 2.
func TestRollingCountsWhatTheSetDeletesFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		machines []*v1alpha1.Machine
		surge    int32
		wantOld  int32
		wantNew  int32
	}{
		{"marked available first: held", []*v1alpha1.Machine{readyMachine("a", marked), readyMachine("b", nil), unknownMachine("c")}, 0, 3, 0},
		{"marked available first, surge 1: held, the new set grows", []*v1alpha1.Machine{readyMachine("a", marked), readyMachine("b", nil), unknownMachine("c")}, 1, 3, 1},
		{"lower priority available first: held", []*v1alpha1.Machine{readyMachine("a", map[string]string{v1alpha1.PriorityAnnotation: "1"}), readyMachine("b", nil), unknownMachine("c")}, 0, 3, 0},
		{"nothing ahead: the unavailable one goes", []*v1alpha1.Machine{readyMachine("a", nil), readyMachine("b", nil), unknownMachine("c")}, 0, 2, 0},
		{"the marked one is the unavailable one: it goes", []*v1alpha1.Machine{readyMachine("a", nil), readyMachine("b", nil), func() *v1alpha1.Machine {
			m := unknownMachine("c")
			m.Annotations = marked
			return m
		}()}, 0, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := Count(tc.machines, 0, orderNow, time.Time{})
			in := rollingInput(3, tc.surge, 1, Set{Name: "new"}, []Set{{Name: "old", Spec: 3, Counts: c}})
			targets := rolling(in)
			old, newSet := targets[0], targets[len(targets)-1]
			if old.To != tc.wantOld || newSet.To != tc.wantNew {
				t.Errorf("counts %+v: old set %d → %d (%s), new set → %d (%s); want old %d, new %d",
					c, old.From, old.To, old.Why, newSet.To, newSet.Why, tc.wantOld, tc.wantNew)
			}
		})
	}
}

// Available is one definition for the planner, the disruption budgets and
// the e2e checks: a Ready Machine its health check marked for replacement
// (OwnerRemediated False) or cordoned for an in-place update is not
// available.
func TestCountUsesTheOneAvailability(t *testing.T) {
	remediated := readyMachine("remediated", nil)
	remediated.Status.Conditions = append(remediated.Status.Conditions, metav1.Condition{
		Type: v1alpha1.OwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: "WaitingForRemediation"})
	updating := readyMachine("updating", nil)
	updating.Status.InPlaceUpdate = &v1alpha1.InPlaceUpdateStatus{Phase: v1alpha1.InPlaceDraining}
	c, _ := Count([]*v1alpha1.Machine{remediated, updating, readyMachine("fine", nil)}, 0, orderNow, time.Time{})
	if c.Available != 1 {
		t.Errorf("Count = %+v; want only the Machine neither remediated nor updating available", c)
	}
}
