package disruption_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// ready is a Running Machine labelled pool=a.
func ready(name string) v1alpha1.Machine {
	return v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"pool": "a"}},
		Status: v1alpha1.MachineStatus{Phase: v1alpha1.PhaseRunning, Conditions: []metav1.Condition{
			{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Running"},
		}},
	}
}

func withCondition(m v1alpha1.Machine, t string, s metav1.ConditionStatus) v1alpha1.Machine {
	out := *m.DeepCopy()
	for i := range out.Status.Conditions {
		if out.Status.Conditions[i].Type == t {
			out.Status.Conditions[i].Status = s
			return out
		}
	}
	out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: "Test"})
	return out
}

func inPlace(m v1alpha1.Machine, phase v1alpha1.InPlaceUpdatePhase) v1alpha1.Machine {
	out := *m.DeepCopy()
	out.Status.InPlaceUpdate = &v1alpha1.InPlaceUpdateStatus{TargetSet: "new", Phase: phase}
	return out
}

// targeted annotates the Machine with the in-place target its status names.
func targeted(m v1alpha1.Machine) v1alpha1.Machine {
	out := *m.DeepCopy()
	out.Annotations = map[string]string{v1alpha1.InPlaceTargetAnnotation: "new"}
	return out
}

func TestWaitingReadsTheKindBack(t *testing.T) {
	m := &v1alpha1.Machine{}
	if _, ok := disruption.Waiting(m); ok {
		t.Fatal("a Machine without the condition waits")
	}
	m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: disruption.ReasonWaitingForBudget, Message: "ScaleDown waits for MachineDisruptionBudget web: no disruption allowed now"}}
	if kind, ok := disruption.Waiting(m); !ok || kind != v1alpha1.DisruptionScaleDown {
		t.Fatalf("Waiting = %q, %v; want ScaleDown, true", kind, ok)
	}
}

// pointers is what Evaluate takes of ms: a pointer to each.
func pointers(ms []v1alpha1.Machine) []*v1alpha1.Machine {
	out := make([]*v1alpha1.Machine, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	return out
}
