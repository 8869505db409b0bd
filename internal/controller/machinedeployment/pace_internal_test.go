package machinedeployment

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestZoneCountPaceHoldsOnlyMovingZoneCounts(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "md"}
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	spreadCond := func(reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.SpreadCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}}
	}
	read := &v1alpha1.MachineDeploymentStatus{
		Replicas:       4,
		FailureDomains: []v1alpha1.FailureDomainStatus{{Name: "a", Machines: 2, Target: 5}, {Name: "b", Machines: 2, Target: 5}},
		Conditions:     spreadCond(v1alpha1.SpreadRebalancingReason, "zone a has 2 Machines for a share of 5"),
	}
	counts := func(a, b int32) *v1alpha1.MachineDeploymentStatus {
		st := read.DeepCopy()
		st.FailureDomains[0].Machines, st.FailureDomains[1].Machines = a, b
		st.Conditions = spreadCond(v1alpha1.SpreadRebalancingReason, "zone a has some Machines for a share of 5")
		return st
	}
	balanced := counts(5, 5)
	balanced.Conditions = spreadCond(v1alpha1.SpreadBalancedReason, "every zone is within one Machine of its share")
	withReplicas := counts(3, 3)
	withReplicas.Replicas = 6
	outOfCapacity := counts(3, 3)
	outOfCapacity.FailureDomains[0].OutOfCapacitySince = &metav1.Time{Time: t0}

	var p zoneCountPace
	if w := p.wait(key, read, counts(3, 3), t0); w != 0 {
		t.Errorf("before any write: held %s, want 0", w)
	}
	p.Wrote(key, t0)
	for _, c := range []struct {
		what     string
		computed *v1alpha1.MachineDeploymentStatus
		at       time.Duration
		want     time.Duration
	}{
		{"only the zone counts moved", counts(3, 3), 300 * time.Millisecond, 700 * time.Millisecond},
		{"only the zone counts moved, a second later", counts(3, 3), time.Second, 0},
		{"every zone reaches its share", counts(5, 5), 300 * time.Millisecond, 0},
		{"the Spread condition's reason changes", balanced, 300 * time.Millisecond, 0},
		{"the sets' counts moved too", withReplicas, 300 * time.Millisecond, 0},
		{"a zone runs out of capacity", outOfCapacity, 300 * time.Millisecond, 0},
		{"nothing changed", read.DeepCopy(), 300 * time.Millisecond, 0},
	} {
		if got := p.wait(key, read, c.computed, t0.Add(c.at)); got != c.want {
			t.Errorf("%s: held %s, want %s", c.what, got, c.want)
		}
	}
	p.Forget(key)
	if w := p.wait(key, read, counts(3, 3), t0.Add(300*time.Millisecond)); w != 0 {
		t.Errorf("forgotten: held %s, want 0", w)
	}
}
