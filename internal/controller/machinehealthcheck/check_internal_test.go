package machinehealthcheck

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The node startup timeout counts from the start of the Machine's create:
// a Machine waiting in its class's create queue (CreateQueued True) is not
// late for a Node, and one whose turn came counts from then.
func TestNodeStartupTimeoutCountsFromTheCreateStart(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	checks := &v1alpha1.MachineHealthCheckChecks{NodeStartupTimeout: &metav1.Duration{Duration: 10 * time.Minute}}
	machine := func(queued metav1.ConditionStatus, since time.Time) *v1alpha1.Machine {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		if queued != "" {
			m.Status.Conditions = []metav1.Condition{{
				Type: v1alpha1.CreateQueuedCondition, Status: queued, Reason: "Queued", LastTransitionTime: metav1.NewTime(since),
			}}
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		m         *v1alpha1.Machine
		healthy   bool
		recheckIn time.Duration
	}{
		{"never queued, created an hour ago", machine("", time.Time{}), false, 0},
		{"queued for an hour", machine(metav1.ConditionTrue, now.Add(-time.Hour)), true, 0},
		{"its create started 4 minutes ago", machine(metav1.ConditionFalse, now.Add(-4*time.Minute)), true, 6 * time.Minute},
		{"its create started 11 minutes ago", machine(metav1.ConditionFalse, now.Add(-11*time.Minute)), false, 0},
	} {
		v := judge(checks, tc.m, nil, now)
		if v.healthy != tc.healthy || v.recheckIn != tc.recheckIn {
			t.Errorf("%s: healthy %v (%s: %s), recheck in %s; want healthy %v, recheck in %s",
				tc.name, v.healthy, v.reason, v.message, v.recheckIn, tc.healthy, tc.recheckIn)
		}
	}
}
