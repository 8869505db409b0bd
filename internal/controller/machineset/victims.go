package machineset

import (
	"hash/fnv"
	"sort"
	"strconv"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
	"github.com/millwright-dev/millwright/internal/spread"
)

// defaultPriority is a Machine's scale-down priority without the annotation.
const defaultPriority = 3

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

// victims returns the n Machines to delete first, in order: those the
// cluster-autoscaler marked with the delete-machine annotation; then lower
// priority annotation; then phase (see phaseRank); then those not yet
// available (Ready for less than minReady: the MachineDeployment's
// availability floor counts on them going first, see docs/rollout.md);
// then, with a placement (z not nil), the zone furthest above its share
// (docs/failure-domains.md); then the delete policy.
func victims(machines []*v1alpha1.Machine, n int, policy v1alpha1.MachineDeletePolicy, minReady time.Duration, now time.Time, z *zoneView) []*v1alpha1.Machine {
	sorted := append([]*v1alpha1.Machine(nil), machines...)
	available := func(m *v1alpha1.Machine) bool { return plan.Available(m, minReady, now) }
	sort.SliceStable(sorted, func(i, j int) bool { return deleteBefore(sorted[i], sorted[j], policy, available) })
	n = min(n, len(sorted))
	if z == nil {
		return sorted[:n]
	}
	return z.victims(sorted, n, available)
}

// victims picks n of sorted (the victim order without zones) through
// spread.Victims: among Machines equal before the delete policy, one at a
// time from the zone furthest above its share.
func (z *zoneView) victims(sorted []*v1alpha1.Machine, n int, available func(*v1alpha1.Machine) bool) []*v1alpha1.Machine {
	zoneOf, class := make([]string, len(sorted)), make([]int, len(sorted))
	for i, m := range sorted {
		zoneOf[i] = m.Spec.FailureDomain
		if i > 0 {
			class[i] = class[i-1]
			if compareState(sorted[i-1], m, available) != 0 {
				class[i]++
			}
		}
	}
	var out []*v1alpha1.Machine
	for _, i := range spread.Victims(z.placement, n, zoneOf, class, z.counts(), z.newest) {
		out = append(out, sorted[i])
	}
	return out
}

func deleteBefore(a, b *v1alpha1.Machine, policy v1alpha1.MachineDeletePolicy, available func(*v1alpha1.Machine) bool) bool {
	if c := compareState(a, b, available); c != 0 {
		return c < 0
	}
	switch policy {
	case v1alpha1.DeletePolicyNewest:
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
	case v1alpha1.DeletePolicyOldest:
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
	default:
		// Random, but stable for a given Machine, so repeated reconciles
		// pick the same victims instead of a new random set each time.
		if ha, hb := nameHash(a.Name), nameHash(b.Name); ha != hb {
			return ha < hb
		}
	}
	return a.Name < b.Name
}

// compareState compares a and b on what comes before the zone and the
// delete policy in the victim order: negative when a goes first, positive
// when b does, 0 when they are equals.
func compareState(a, b *v1alpha1.Machine, available func(*v1alpha1.Machine) bool) int {
	less := func(x, y bool) int {
		if x {
			return -1
		}
		if y {
			return 1
		}
		return 0
	}
	if am, bm := marked(a), marked(b); am != bm {
		return less(am, bm)
	}
	if ap, bp := priority(a), priority(b); ap != bp {
		return less(ap < bp, bp < ap)
	}
	if ar, br := rank(a), rank(b); ar != br {
		return less(ar < br, br < ar)
	}
	if aa, ba := available(a), available(b); aa != ba {
		return less(ba, aa)
	}
	return 0
}

func marked(m *v1alpha1.Machine) bool {
	_, ok := m.Annotations[v1alpha1.DeleteMachineAnnotation]
	return ok
}

func priority(m *v1alpha1.Machine) int {
	if v, ok := m.Annotations[v1alpha1.PriorityAnnotation]; ok {
		if p, err := strconv.Atoi(v); err == nil {
			return p
		}
	}
	return defaultPriority
}

func rank(m *v1alpha1.Machine) int {
	// From the fields, not status.phase: a summary that may lag behind them.
	r, ok := phaseRank[machine.ComputePhase(m)]
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
