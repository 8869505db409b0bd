package machinedeployment

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestMachineCountedPassesWhatThePlannerCounts: the deployment is woken by
// every Machine change its planner counts, and only by those.
func TestMachineCountedPassesWhatThePlannerCounts(t *testing.T) {
	base := &v1alpha1.Machine{}
	base.Status.Phase = v1alpha1.PhaseRunning
	ready := func(m *v1alpha1.Machine, status metav1.ConditionStatus, at time.Time) *v1alpha1.Machine {
		m = m.DeepCopy()
		m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: status, LastTransitionTime: metav1.NewTime(at)}}
		return m
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	readyNow := ready(base, metav1.ConditionTrue, t0)
	failed := readyNow.DeepCopy()
	failed.Status.FailureReason = "broken"
	deleting := readyNow.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	relabelled := readyNow.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	tests := []struct {
		name     string
		old, new *v1alpha1.Machine
		want     bool
	}{
		{"becomes Ready", ready(base, metav1.ConditionFalse, t0), readyNow, true},
		{"Ready again later (availability restarts)", readyNow, ready(base, metav1.ConditionTrue, t0.Add(time.Minute)), true},
		{"stops being Ready", readyNow, ready(base, metav1.ConditionFalse, t0.Add(time.Minute)), true},
		{"fails", readyNow, failed, true},
		{"deletion starts", readyNow, deleting, true},
		{"a label changes", readyNow, relabelled, false},
		{"not Ready, still not", ready(base, metav1.ConditionFalse, t0), ready(base, metav1.ConditionUnknown, t0.Add(time.Minute)), false},
	}
	p := machineCounted()
	for _, tc := range tests {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: passed %v, want %v", tc.name, got, tc.want)
		}
	}
}
