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
	want := Counts{Machines: 6, Terminating: 1, Available: 2, Left: 4, Failed: 1}
	if c != want || next != 5*time.Second {
		t.Errorf("Count = %+v, next %v; want %+v, next 5s", c, next, want)
	}
	if c, _ := Count(machines, 10*time.Second, now, time.Time{}); c.Left != 5 {
		t.Errorf("without the superseded mark, Left = %d, want every live Machine (5)", c.Left)
	}
}

// BenchmarkCount counts 5000 Running Machines, each with the conditions a
// Running Machine carries: the deployment's reconcile does this for every
// set, at every Machine event that changes a count (docs/benchmarks.md,
// "Where we stand", names its share of the manager's CPU at N=5000).
func BenchmarkCount(b *testing.B) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	machines := make([]*v1alpha1.Machine, 5000)
	for i := range machines {
		m := &v1alpha1.Machine{}
		m.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
		for _, t := range []string{v1alpha1.BootstrapReadyCondition, v1alpha1.InfrastructureReadyCondition,
			v1alpha1.NodeReadyCondition, v1alpha1.NodeHealthyCondition, v1alpha1.ReadyCondition} {
			m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{
				Type: t, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))})
		}
		machines[i] = m
	}
	b.ReportAllocs()
	for b.Loop() {
		if c, _ := Count(machines, 0, now, time.Time{}); int(c.Available) != len(machines) {
			b.Fatalf("%d of %d available", c.Available, len(machines))
		}
	}
}
