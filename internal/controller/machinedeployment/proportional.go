package machinedeployment

import (
	"math"
	"sort"
)

// scaleInput is what a scaling event is decided from.
type scaleInput struct {
	Replicas int32
	// MaxSurge is the resolved maxSurge; 0 unless RollingUpdate.
	MaxSurge int32
	// StatusReplicas is the deployment's status.replicas: the base of a set
	// that lacks the max-replicas annotation.
	StatusReplicas int32
	Paused         bool
	// NewSet names the set of the current template; "" when there is none.
	NewSet string
	// Sets are all owned sets, the new one included.
	Sets []setView
}

// isScalingEvent reports whether the deployment was scaled since its active
// sets were last sized: one of them records another spec.replicas.
func isScalingEvent(replicas int32, sets []setView) bool {
	for _, s := range sets {
		if s.active() && s.HasDesired && s.Desired != replicas {
			return true
		}
	}
	return false
}

// planScale decides a scaling event: the spec.replicas of each set whose
// size changes (see the package documentation for the rule).
func planScale(in scaleInput) map[string]int32 {
	plan := map[string]int32{}
	if len(in.Sets) == 0 {
		return plan
	}
	var active []setView
	for _, s := range in.Sets {
		if s.active() {
			active = append(active, s)
		}
	}
	adder := scaleOutTarget(in, active)
	switch {
	case len(active) == 0:
		plan[adder.Name] = in.Replicas
	case saturated(in):
		for _, s := range active {
			if s.Name != in.NewSet {
				plan[s.Name] = 0
			}
		}
	case len(active) == 1 && active[0].Name == adder.Name:
		plan[adder.Name] = in.Replicas
	default:
		budget := int32(0)
		if in.Replicas > 0 {
			budget = in.Replicas + in.MaxSurge
		}
		toAdd := budget - sum(active, func(v setView) int32 { return v.Spec })
		switch {
		case toAdd > 0:
			// Scale-out only grows the newest template: old-template
			// Machines added now would be replaced right after.
			plan[adder.Name] = max(adder.Spec, min(adder.Spec+toAdd, in.Replicas))
		case toAdd < 0:
			for name, size := range proportionalScaleDown(in, active, toAdd) {
				plan[name] = size
			}
		}
	}
	for _, s := range in.Sets {
		if size, ok := plan[s.Name]; ok && size == s.Spec {
			delete(plan, s.Name)
		}
	}
	return plan
}

// scaleOutTarget is the set that receives added Machines: the new set;
// while paused and before the new set got any Machine, the newest old set
// instead, so a pause never starts a rollout.
func scaleOutTarget(in scaleInput, active []setView) setView {
	var newSet *setView
	var old []setView
	for i := range in.Sets {
		if in.Sets[i].Name == in.NewSet {
			newSet = &in.Sets[i]
		} else {
			old = append(old, in.Sets[i])
		}
	}
	if newSet != nil && (!in.Paused || newSet.active()) {
		return *newSet
	}
	var activeOld []setView
	for _, s := range active {
		if s.Name != in.NewSet {
			activeOld = append(activeOld, s)
		}
	}
	if len(activeOld) > 0 {
		return newest(activeOld)
	}
	if len(old) > 0 {
		return newest(old)
	}
	return *newSet
}

// newest is the set with the highest revision, the latest created on ties.
func newest(sets []setView) setView {
	best := sets[0]
	for _, s := range sets[1:] {
		if s.Revision > best.Revision || (s.Revision == best.Revision && s.Created.After(best.Created)) {
			best = s
		}
	}
	return best
}

// saturated reports whether the new set has all the deployment's Machines,
// available, sized for the current replicas: then old sets can go.
func saturated(in scaleInput) bool {
	for _, s := range in.Sets {
		if s.Name == in.NewSet {
			return s.Spec == in.Replicas && s.HasDesired && s.Desired == in.Replicas && s.Available >= in.Replicas
		}
	}
	return false
}

// proportionalScaleDown removes -toAdd Machines from the active sets in
// proportion to their sizes, as Kubernetes does: largest set first, older
// first on ties, each shrunk to round(spec × budget / its max-replicas),
// the rounding leftover taken from the first (largest) set.
func proportionalScaleDown(in scaleInput, active []setView, toAdd int32) map[string]int32 {
	sorted := append([]setView(nil), active...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Spec != b.Spec {
			return a.Spec > b.Spec
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.Revision < b.Revision
	})
	sizes := map[string]int32{}
	var added int32
	for _, s := range sorted {
		p := int32(0)
		if added != toAdd {
			p = max(fraction(in, s), toAdd-added)
		}
		sizes[s.Name] = s.Spec + p
		added += p
	}
	first := sorted[0].Name
	sizes[first] = max(0, sizes[first]+toAdd-added)
	return sizes
}

// fraction is how many Machines (negative: fewer) the set should have so
// that it keeps its share of the fleet after the scaling event.
func fraction(in scaleInput, s setView) int32 {
	if in.Replicas == 0 {
		return -s.Spec
	}
	base := s.MaxReplicas
	if base == 0 {
		base = in.StatusReplicas
	}
	if base == 0 {
		return 0
	}
	budget := in.Replicas + in.MaxSurge
	return int32(math.Round(float64(s.Spec)*float64(budget)/float64(base))) - s.Spec
}
