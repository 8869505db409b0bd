package machineset

import (
	"hash/fnv"
	"sort"
	"strconv"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
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
// then the delete policy.
func victims(machines []*v1alpha1.Machine, n int, policy v1alpha1.MachineDeletePolicy, minReady time.Duration, now time.Time) []*v1alpha1.Machine {
	sorted := append([]*v1alpha1.Machine(nil), machines...)
	available := func(m *v1alpha1.Machine) bool { return plan.Available(m, minReady, now) }
	sort.SliceStable(sorted, func(i, j int) bool { return deleteBefore(sorted[i], sorted[j], policy, available) })
	if n > len(sorted) {
		n = len(sorted)
	}
	return sorted[:n]
}

func deleteBefore(a, b *v1alpha1.Machine, policy v1alpha1.MachineDeletePolicy, available func(*v1alpha1.Machine) bool) bool {
	if am, bm := marked(a), marked(b); am != bm {
		return am
	}
	if ap, bp := priority(a), priority(b); ap != bp {
		return ap < bp
	}
	if ar, br := rank(a), rank(b); ar != br {
		return ar < br
	}
	if aa, ba := available(a), available(b); aa != ba {
		return ba
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
