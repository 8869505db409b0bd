package machineset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestStatusPaceHoldsOnlyMovingCounts(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "set"}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	read := &v1alpha1.MachineSetStatus{Replicas: 10, FullyLabeledReplicas: 10, ReadyReplicas: 4, AvailableReplicas: 4}
	counts := func(ready int32) *v1alpha1.MachineSetStatus {
		st := read.DeepCopy()
		st.ReadyReplicas, st.AvailableReplicas = ready, ready
		return st
	}
	withCondition := counts(5)
	withCondition.Conditions = []metav1.Condition{{Type: v1alpha1.ReplicaFailureCondition, Status: metav1.ConditionTrue}}
	withFailed := counts(5)
	withFailed.FailedMachines = []v1alpha1.MachineSummary{{Name: "m"}}

	var p statusPace
	if w := p.wait(key, 10, read, counts(5), t0); w != 0 {
		t.Errorf("before any write: held %s, want 0", w)
	}
	p.Wrote(key, t0)
	for _, c := range []struct {
		what     string
		computed *v1alpha1.MachineSetStatus
		at       time.Duration
		want     time.Duration
	}{
		{"only the counts moved", counts(5), 300 * time.Millisecond, 700 * time.Millisecond},
		{"only the counts moved, a second later", counts(5), time.Second, 0},
		{"the last count of the scale", counts(10), 300 * time.Millisecond, 0},
		{"a condition changed", withCondition, 300 * time.Millisecond, 0},
		{"a failed Machine", withFailed, 300 * time.Millisecond, 0},
		{"nothing changed", read.DeepCopy(), 300 * time.Millisecond, 0},
	} {
		if got := p.wait(key, 10, read, c.computed, t0.Add(c.at)); got != c.want {
			t.Errorf("%s: held %s, want %s", c.what, got, c.want)
		}
	}
	if w := p.wait(types.NamespacedName{Namespace: "ns", Name: "other"}, 10, read, counts(5), t0); w != 0 {
		t.Errorf("another set: held %s, want 0", w)
	}
	p.Forget(key)
	if w := p.wait(key, 10, read, counts(5), t0); w != 0 {
		t.Errorf("after forget: held %s, want 0", w)
	}
}
