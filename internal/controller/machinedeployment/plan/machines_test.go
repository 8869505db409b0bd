package plan

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestCount(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	since := now.Add(-time.Minute)
	machine := func(created time.Time, deleting bool, readyFor time.Duration, failed bool) *v1alpha1.Machine {
		m := &v1alpha1.Machine{}
		m.CreationTimestamp = metav1.NewTime(created)
		if deleting {
			m.DeletionTimestamp = &metav1.Time{Time: since}
		}
		if readyFor >= 0 {
			m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(now.Add(-readyFor))}}
		}
		if failed {
			m.Status.FailureReason = "broken"
		}
		return m
	}
	machines := []*v1alpha1.Machine{
		machine(since.Add(-time.Hour), false, time.Hour, false),    // old, available
		machine(since, false, 5*time.Second, false),                // created the same second: left; Ready, not yet for 10s
		machine(since.Add(-time.Hour), true, time.Hour, false),     // being deleted: neither left nor available
		machine(since.Add(2*time.Second), false, time.Hour, false), // a replacement raced in: not left, available
		machine(since.Add(-time.Hour), false, time.Hour, true),     // failed: left, not available
		machine(since.Add(-time.Hour), false, -1, false),           // not Ready
	}
	c, next := Count(machines, 10*time.Second, now, since)
	want := Counts{Machines: 6, Terminating: 1, Available: 2, Left: 4}
	if c != want || next != 5*time.Second {
		t.Errorf("Count = %+v, next %v; want %+v, next 5s", c, next, want)
	}
	if c, _ := Count(machines, 10*time.Second, now, time.Time{}); c.Left != 5 {
		t.Errorf("without the superseded mark, Left = %d, want every live Machine (5)", c.Left)
	}
}
