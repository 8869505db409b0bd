package machinedeployment

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestUpdateProgressing(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	deadline := ptr.To(60 * time.Second)
	progressing := func(status metav1.ConditionStatus, reason string, ago time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ProgressingCondition, Status: status, Reason: reason,
			LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
	}
	counts := func(replicas, updated, ready, available int32) v1alpha1.MachineDeploymentStatus {
		return v1alpha1.MachineDeploymentStatus{Replicas: replicas, UpdatedReplicas: updated,
			ReadyReplicas: ready, AvailableReplicas: available, ObservedGeneration: 1}
	}
	tests := []struct {
		name        string
		in          progressInput
		cur         v1alpha1.MachineDeploymentStatus // the newly computed counts
		conditions  []metav1.Condition               // carried over from the old status
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMoved   bool // lastTransitionTime is now
		wantRequeue time.Duration
	}{
		{"a new set was created", progressInput{CreatedNewSet: true, NewSet: "md-a", Replicas: 3, Old: counts(3, 3, 3, 3)},
			counts(3, 0, 3, 3), progressing(metav1.ConditionTrue, reasonNewSetAvailable, time.Hour),
			metav1.ConditionTrue, reasonNewSetCreated, true, 61*time.Second + 100*time.Millisecond},
		{"progress moves the clock", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 1, 3, 3)},
			counts(4, 2, 3, 3), progressing(metav1.ConditionTrue, reasonSetUpdated, 50*time.Second),
			metav1.ConditionTrue, reasonSetUpdated, true, 61*time.Second + 100*time.Millisecond},
		{"no progress within the deadline: wait for it", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 1, 3, 3)},
			counts(4, 1, 3, 3), progressing(metav1.ConditionTrue, reasonSetUpdated, 50*time.Second),
			metav1.ConditionTrue, reasonSetUpdated, false, 11*time.Second + 100*time.Millisecond},
		{"the deadline counts from the end of the recorded second", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 1, 3, 3)},
			counts(4, 1, 3, 3), progressing(metav1.ConditionTrue, reasonSetUpdated, 60*time.Second),
			metav1.ConditionTrue, reasonSetUpdated, false, 1*time.Second + 100*time.Millisecond},
		{"no progress past the deadline", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 1, 3, 3)},
			counts(4, 1, 3, 3), progressing(metav1.ConditionTrue, reasonSetUpdated, 61*time.Second),
			metav1.ConditionFalse, reasonDeadlineExceeded, true, 0},
		{"stuck stays stuck", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 1, 3, 3)},
			counts(4, 1, 3, 3), progressing(metav1.ConditionFalse, reasonDeadlineExceeded, time.Hour),
			metav1.ConditionFalse, reasonDeadlineExceeded, false, 0},
		{"progress after being stuck", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 1, 3, 3)},
			counts(4, 2, 3, 3), progressing(metav1.ConditionFalse, reasonDeadlineExceeded, time.Hour),
			metav1.ConditionTrue, reasonSetUpdated, true, 61*time.Second + 100*time.Millisecond},
		{"complete", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 2, 3, 3)},
			counts(3, 3, 3, 3), progressing(metav1.ConditionTrue, reasonSetUpdated, 10*time.Second),
			metav1.ConditionTrue, reasonNewSetAvailable, true, 0},
		{"a scale-up after completion is no rollout", progressInput{NewSet: "md-a", Replicas: 5, Old: counts(3, 3, 3, 3)},
			counts(3, 3, 3, 3), progressing(metav1.ConditionTrue, reasonNewSetAvailable, time.Hour),
			metav1.ConditionTrue, reasonNewSetAvailable, false, 0},
		{"paused", progressInput{Paused: true, NewSet: "md-a", Replicas: 3},
			counts(4, 1, 3, 3), progressing(metav1.ConditionTrue, reasonSetUpdated, 10*time.Second),
			metav1.ConditionUnknown, reasonPaused, true, 0},
		{"paused while stuck stays stuck", progressInput{Paused: true, NewSet: "md-a", Replicas: 3},
			counts(4, 1, 3, 3), progressing(metav1.ConditionFalse, reasonDeadlineExceeded, time.Hour),
			metav1.ConditionFalse, reasonDeadlineExceeded, false, 0},
		{"resumed: the deadline counts from now", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 1, 3, 3)},
			counts(4, 1, 3, 3), progressing(metav1.ConditionUnknown, reasonPaused, time.Hour),
			metav1.ConditionUnknown, reasonResumed, true, 61*time.Second + 100*time.Millisecond},
		{"first look at an existing rollout", progressInput{NewSet: "md-a", Replicas: 3, Old: counts(4, 1, 3, 3)},
			counts(4, 1, 3, 3), nil,
			metav1.ConditionTrue, reasonFoundNewSet, true, 61*time.Second + 100*time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now, tc.in.Deadline, tc.in.Generation = now, deadline, 1
			st := tc.cur
			st.Conditions = tc.conditions
			requeue := updateProgressing(&st, tc.in)
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ProgressingCondition)
			if c == nil {
				t.Fatal("no Progressing condition")
			}
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason {
				t.Errorf("Progressing = %s/%s, want %s/%s", c.Status, c.Reason, tc.wantStatus, tc.wantReason)
			}
			if moved := c.LastTransitionTime.Time.Equal(now); moved != tc.wantMoved {
				t.Errorf("lastTransitionTime %v moved = %v, want %v", c.LastTransitionTime, moved, tc.wantMoved)
			}
			if requeue != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", requeue, tc.wantRequeue)
			}
		})
	}
}

func TestAvailableCondition(t *testing.T) {
	st := &v1alpha1.MachineDeploymentStatus{AvailableReplicas: 8}
	if s, _, _ := availableCondition(st, 10, 2); s != metav1.ConditionTrue {
		t.Error("8 of 10 with maxUnavailable 2 is available")
	}
	if s, r, _ := availableCondition(st, 10, 1); s != metav1.ConditionFalse || r != reasonMinimumUnavailable {
		t.Error("8 of 10 with maxUnavailable 1 is not available")
	}
}
