package machineclass

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func inUse(message string) []metav1.Condition {
	return []metav1.Condition{
		{Type: v1alpha1.DriverAvailableCondition, Status: metav1.ConditionTrue, Reason: ReasonDriverRegistered},
		{Type: v1alpha1.InUseCondition, Status: metav1.ConditionTrue, Reason: ReasonInUse, Message: message},
	}
}

func TestStatusPace(t *testing.T) {
	read := v1alpha1.MachineClassStatus{ObservedGeneration: 1, Machines: 10, CreatesInFlight: 3, Conditions: inUse("used by 10 Machine(s)")}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.MachineClassStatus)
		paced  bool
	}{
		{"nothing changed", func(*v1alpha1.MachineClassStatus) {}, false},
		{"counts within their buckets", func(s *v1alpha1.MachineClassStatus) {
			s.Machines, s.CreatesInFlight = 11, 4
			s.Conditions = inUse("used by 11 Machine(s)")
		}, true},
		{"creates in flight reach zero", func(s *v1alpha1.MachineClassStatus) { s.CreatesInFlight = 0 }, false},
		{"a first create queued", func(s *v1alpha1.MachineClassStatus) { s.CreatesQueued = 1 }, false},
		{"a first delete in flight", func(s *v1alpha1.MachineClassStatus) { s.DeletesInFlight = 1 }, false},
		{"no Machine left", func(s *v1alpha1.MachineClassStatus) { s.Machines = 0 }, false},
		{"a condition changes", func(s *v1alpha1.MachineClassStatus) {
			s.Conditions = inUse("used by 10 Machine(s)")
			s.Conditions[0].Status = metav1.ConditionFalse
		}, false},
		{"the generation", func(s *v1alpha1.MachineClassStatus) { s.ObservedGeneration = 2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			computed := read.DeepCopy()
			tc.change(computed)
			var p statusPace
			start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
			if w := p.wait("uid", &read, computed, start); w != 0 {
				t.Errorf("never written before: wait %s, want 0 (a restarted manager writes at once)", w)
			}
			p.Wrote("uid", start)
			want := time.Duration(0)
			if tc.paced {
				want = countInterval - 3*time.Second
			}
			if w := p.wait("uid", &read, computed, start.Add(3*time.Second)); w != want {
				t.Errorf("3 s after a write: wait %s, want %s", w, want)
			}
			if w := p.wait("uid", &read, computed, start.Add(countInterval)); w != 0 {
				t.Errorf("countInterval after a write: wait %s, want 0", w)
			}
			p.Forget("uid")
			if w := p.wait("uid", &read, computed, start.Add(time.Second)); w != 0 {
				t.Errorf("forgotten: wait %s, want 0", w)
			}
		})
	}
}
