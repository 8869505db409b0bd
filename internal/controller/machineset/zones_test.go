package machineset

import (
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func inZone(m *v1alpha1.Machine, zone string) *v1alpha1.Machine {
	m.Spec.FailureDomain = zone
	return m
}

var abc = []v1alpha1.PlacementZone{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}

// Among Machines equal before the delete policy, the most crowded zone
// loses one first, counted after each pick; the autoscaler's mark and the
// phase still come first, whatever the zone.
func TestVictimsByZone(t *testing.T) {
	running, pending := v1alpha1.PhaseRunning, v1alpha1.PhasePending
	ms := []*v1alpha1.Machine{
		inZone(mach("a-old", running, 3*time.Hour, nil, true), "a"),
		inZone(mach("a-young", running, time.Hour, nil, true), "a"),
		inZone(mach("b-1", running, 2*time.Hour, nil, true), "b"),
		inZone(mach("b-2", running, 2*time.Hour, nil, true), "b"),
		inZone(mach("b-3", running, 2*time.Hour, nil, true), "b"),
		inZone(mach("c-pending", pending, time.Minute, nil, false), "c"),
		inZone(mach("c-marked", running, 4*time.Hour, map[string]string{v1alpha1.DeleteMachineAnnotation: "yes"}, true), "c"),
	}
	z := &zoneView{placement: abc, others: map[string]int32{"a": 2}}
	z.count(ms) // a 2+2, b 3, c 2
	got := namesOf(victims(ms, 5, v1alpha1.DeletePolicyOldest, 0, time.Now(), z))
	// marked, then the pending one; then a (4) before b (3), the oldest of
	// a; then a and b are even (3 each): b, where the set has the most
	// left; then a again (3 against 2).
	want := []string{"c-marked", "c-pending", "a-old", "b-1", "a-young"}
	if len(got) != len(want) {
		t.Fatalf("victims = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("victims = %v, want %v", got, want)
		}
	}
}

func TestStuckOutOfCapacity(t *testing.T) {
	refused := func(zone, providerID, code string) *v1alpha1.Machine {
		m := inZone(mach("m", v1alpha1.PhasePending, time.Minute, nil, false), zone)
		m.Spec.ProviderID = providerID
		m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationCreate, State: v1alpha1.OperationFailed, ErrorCode: code}
		return m
	}
	bOut := &zoneView{placement: []v1alpha1.PlacementZone{{Name: "a", Weight: 1}, {Name: "b", Weight: 1, OutOfCapacity: true}}}
	allOut := &zoneView{placement: []v1alpha1.PlacementZone{{Name: "a", Weight: 1, OutOfCapacity: true}, {Name: "b", Weight: 1, OutOfCapacity: true}}}
	cases := []struct {
		name string
		z    *zoneView
		m    *v1alpha1.Machine
		want bool
	}{
		{"refused in a zone out of capacity", bOut, refused("b", "", "ResourceExhausted"), true},
		{"refused in a zone with capacity", bOut, refused("a", "", "ResourceExhausted"), false},
		{"has a VM", bOut, refused("b", "sim://x/b/1", "ResourceExhausted"), false},
		{"refused for another reason", bOut, refused("b", "", "Unavailable"), false},
		{"every zone out of capacity: nowhere to go", allOut, refused("b", "", "ResourceExhausted"), false},
		{"no placement", nil, refused("b", "", "ResourceExhausted"), false},
	}
	for _, tc := range cases {
		if got := tc.z.stuck(tc.m); got != tc.want {
			t.Errorf("%s: stuck = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// An old set of a deployment being rolled out removes, between zones as
// crowded, from the one the newest set has filled least.
func TestVictimsOfAnOldSet(t *testing.T) {
	running := v1alpha1.PhaseRunning
	ms := []*v1alpha1.Machine{
		inZone(mach("c-1", running, time.Hour, nil, true), "c"),
		inZone(mach("c-2", running, time.Hour, nil, true), "c"),
		inZone(mach("a-1", running, time.Hour, nil, true), "a"),
	}
	// Deployment-wide 4/3/4. The newest set has 1 in a, 3 in b, 2 in c;
	// another old set has 2 in a.
	z := &zoneView{placement: abc, others: map[string]int32{"a": 3, "b": 3, "c": 2}, newest: map[string]int32{"a": 1, "b": 3, "c": 2}}
	z.count(ms)
	if got := namesOf(victims(ms, 1, v1alpha1.DeletePolicyOldest, 0, time.Now(), z)); got[0] != "a-1" {
		t.Errorf("victim %v; want a-1: the newest set has fewer Machines in a than in c", got)
	}
	z.newest = nil
	if got := namesOf(victims(ms, 1, v1alpha1.DeletePolicyOldest, 0, time.Now(), z)); got[0] == "a-1" {
		t.Errorf("victim %v; without a newer set the set drains c, where it has the most", got)
	}
}
