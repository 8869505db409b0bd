package machineset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// rebalanceScope is a set of 6 with rebalanceSurge 1 over a, b, c whose
// Machines run in a and c only (3/0/3), all available.
func rebalanceScope() (*scope, *zoneView) {
	ms := &v1alpha1.MachineSet{}
	ms.Spec.Replicas = 6
	ms.Spec.FailureDomains = &v1alpha1.FailureDomainPlacement{Zones: abc, RebalanceSurge: 1}
	l := newLedger(ms, "")
	s := &scope{ms: ms, ledger: l, owned: l.machines}
	var alive []*v1alpha1.Machine
	for _, n := range []string{"a1", "a2", "a3", "c1", "c2", "c3"} {
		m := inZone(mach(n, v1alpha1.PhaseRunning, time.Hour, nil, true), n[:1])
		s.owned[n] = m
		alive = append(alive, m)
	}
	z := &zoneView{placement: abc, others: map[string]int32{}}
	z.count(alive)
	s.now = time.Now().Add(time.Second) // after the Machines' Ready conditions
	return s, z
}

func TestRebalanceTo(t *testing.T) {
	cases := []struct {
		name string
		edit func(s *scope, z *zoneView)
		want string
	}{
		{"a zone two below its share", func(*scope, *zoneView) {}, "b"},
		{"no surge", func(s *scope, _ *zoneView) { s.ms.Spec.FailureDomains.RebalanceSurge = 0 }, ""},
		{"another set's Machines (a rollout)", func(_ *scope, z *zoneView) { z.others["a"] = 1 }, ""},
		{"a Machine on its way", func(s *scope, _ *zoneView) {
			s.owned["c3"] = inZone(mach("c3", v1alpha1.PhaseProvisioning, time.Minute, nil, false), "c")
		}, ""},
		{"a Machine being deleted", func(s *scope, _ *zoneView) {
			d := s.owned["a1"].DeepCopy()
			d.DeletionTimestamp = &metav1.Time{Time: s.now}
			s.owned["a1"] = d
		}, ""},
		{"the zone below is out of capacity", func(s *scope, z *zoneView) {
			z.placement = []v1alpha1.PlacementZone{abc[0], {Name: "b", Weight: 1, OutOfCapacity: true}, abc[2]}
		}, ""},
	}
	for _, tc := range cases {
		s, z := rebalanceScope()
		tc.edit(s, z)
		if got := rebalanceTo(s, z); got != tc.want {
			t.Errorf("%s: rebalanceTo = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The set keeps its rebalance Machine and the one it replaces until the
// new one is available; then the scale-down goes on.
func TestRebalanceHeld(t *testing.T) {
	s, _ := rebalanceScope()
	var alive []*v1alpha1.Machine
	for _, m := range s.owned {
		alive = append(alive, m)
	}
	moving := inZone(mach("b1", v1alpha1.PhaseProvisioning, time.Minute, map[string]string{rebalanceAnnotation: "b"}, false), "b")
	if got := rebalanceHeld(s.ms, append(alive, moving), s.now); got != 1 {
		t.Errorf("with the rebalance Machine on its way, held = %d, want 1", got)
	}
	arrived := inZone(mach("b1", v1alpha1.PhaseRunning, time.Minute, map[string]string{rebalanceAnnotation: "b"}, true), "b")
	// (mach's Ready condition is from now: look a moment later.)
	if got := rebalanceHeld(s.ms, append(alive, arrived), time.Now().Add(time.Second)); got != 0 {
		t.Errorf("with the rebalance Machine available, held = %d, want 0", got)
	}
	s.ms.Spec.FailureDomains.RebalanceSurge = 0
	if got := rebalanceHeld(s.ms, append(alive, moving), s.now); got != 0 {
		t.Errorf("without rebalanceSurge, held = %d, want 0", got)
	}
}
