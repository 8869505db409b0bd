package machineset

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/spread"
)

// phaseRank orders phases for scale-down: broken and unfinished Machines go
// before working ones, and Machines without a Node before those with one.
var phaseRank = map[v1alpha1.MachinePhase]int{
	v1alpha1.PhaseFailed:           0,
	v1alpha1.PhaseCrashLoopBackOff: 1,
	v1alpha1.PhaseUnknown:          2,
	v1alpha1.PhasePending:          3,
	"":                             3,
	v1alpha1.PhaseProvisioning:     3,
	v1alpha1.PhaseProvisioned:      4,
	v1alpha1.PhaseRunning:          5,
}

// victims returns the n Machines to delete first, in order: by
// machinefacts.DeleteGroup (those the cluster-autoscaler marked with the
// delete-machine annotation, then lower priority annotation); then those
// not available before available ones (machinefacts.Available with
// minReady: the MachineDeployment's planner counts on exactly this order,
// see docs/rollout.md); then phase (see phaseRank); then, with a
// placement (z not nil), the zone furthest above its share
// (docs/failure-domains.md); then the delete policy.
func victims(machines []*v1alpha1.Machine, n int, policy v1alpha1.MachineDeletePolicy, minReady time.Duration, now time.Time, z *zoneView) []*v1alpha1.Machine {
	// Each Machine's place in the order is derived once, not at every
	// comparison: a set of 5000 sorts in ~60,000 comparisons, and deriving
	// a phase and availability in each was most of its scale-down's CPU
	// (docs/benchmarks.md).
	sorted := make([]candidate, len(machines))
	for i, m := range machines {
		sorted[i] = newCandidate(m, minReady, now)
	}
	slices.SortStableFunc(sorted, func(a, b candidate) int { return order(&a, &b, policy) })
	n = min(n, len(sorted))
	if z != nil {
		return z.victims(sorted, n)
	}
	out := make([]*v1alpha1.Machine, n)
	for i := range out {
		out[i] = sorted[i].m
	}
	return out
}

// candidate is a Machine with what its place in the victim order depends
// on.
type candidate struct {
	m         *v1alpha1.Machine
	group     machinefacts.DeleteGroup
	available bool   // machinefacts.Available
	rank      int    // see rank
	hash      uint32 // nameHash, the Random delete policy's order
}

func newCandidate(m *v1alpha1.Machine, minReady time.Duration, now time.Time) candidate {
	return candidate{m: m, group: machinefacts.DeleteGroupOf(m), available: machinefacts.Available(m, minReady, now), rank: rank(m), hash: nameHash(m.Name)}
}

// victims picks n of sorted (the victim order without zones) through
// spread.Victims: among Machines equal before the delete policy, one at a
// time from the zone furthest above its share.
func (z *zoneView) victims(sorted []candidate, n int) []*v1alpha1.Machine {
	zoneOf, class := make([]string, len(sorted)), make([]int, len(sorted))
	for i := range sorted {
		zoneOf[i] = sorted[i].m.Spec.FailureDomain
		if i > 0 {
			class[i] = class[i-1]
			if compareState(&sorted[i-1], &sorted[i]) != 0 {
				class[i]++
			}
		}
	}
	var out []*v1alpha1.Machine
	for _, i := range spread.Victims(z.placement, n, zoneOf, class, z.counts(), z.newest) {
		out = append(out, sorted[i].m)
	}
	return out
}

// order compares a and b in the victim order: negative when a goes first.
func order(ca, cb *candidate, policy v1alpha1.MachineDeletePolicy) int {
	if c := compareState(ca, cb); c != 0 {
		return c
	}
	a, b := ca.m, cb.m
	switch policy {
	case v1alpha1.DeletePolicyNewest:
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
	case v1alpha1.DeletePolicyOldest:
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
	default:
		// Random, but stable for a given Machine, so repeated reconciles
		// pick the same victims instead of a new random set each time.
		if c := cmp.Compare(ca.hash, cb.hash); c != 0 {
			return c
		}
	}
	return strings.Compare(a.Name, b.Name)
}

// compareState compares a and b on what comes before the zone and the
// delete policy in the victim order: negative when a goes first, positive
// when b does, 0 when they are equals.
func compareState(a, b *candidate) int {
	less := func(x, y bool) int {
		if x {
			return -1
		}
		if y {
			return 1
		}
		return 0
	}
	if c := a.group.Compare(b.group); c != 0 {
		return c
	}
	if a.available != b.available {
		return less(b.available, a.available)
	}
	if a.rank != b.rank {
		return less(a.rank < b.rank, b.rank < a.rank)
	}
	return 0
}

func rank(m *v1alpha1.Machine) int {
	// From the fields, not status.phase: a summary that may lag behind them.
	r, ok := phaseRank[machinefacts.Phase(m)]
	if !ok {
		r = phaseRank[v1alpha1.PhaseRunning]
	}
	// Within a phase, a Machine without a Node goes first.
	r *= 2
	if m.Status.NodeRef != nil {
		r++
	}
	return r
}

func nameHash(name string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return h.Sum32()
}
