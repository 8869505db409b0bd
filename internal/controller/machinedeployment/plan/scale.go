package plan

import (
	"fmt"
	"math"
	"sort"
)

// isScalingEvent reports whether the deployment was scaled since its active
// sets were last sized: one of them records another spec.replicas.
func isScalingEvent(replicas int32, live []Set) bool {
	for _, s := range live {
		if s.active() && s.HasDesired && s.Desired != replicas {
			return true
		}
	}
	return false
}

// scale settles a scaling event, or sizes a paused deployment, with the
// rule of the Machine Controller Manager: scale-out adds Machines only to
// the new set (old-template Machines added now would be replaced right
// after); scale-in removes Machines from every active set in proportion to
// its size. With budget = replicas + maxSurge (0 when replicas is 0):
//
//   - no active set: the newest set gets replicas;
//   - the new set is saturated (replicas, all available): old sets go to 0;
//   - one active set that receives scale-out: it gets replicas;
//   - otherwise toAdd = budget − Σ active spec.replicas: a positive one all
//     goes to the set that receives scale-out, never past replicas; a
//     negative one is taken from every active set (proportionalScaleDown).
//
// Sets being deleted take no part.
func scale(in Input) []Target {
	live := in.live()
	targets := make([]Target, len(live))
	for i, s := range live {
		targets[i] = Target{Name: s.Name, From: s.Spec, To: s.Spec, Why: "scale: unchanged"}
	}
	if len(live) == 0 {
		return nil
	}
	set := func(name string, to int32, why string) {
		for i := range targets {
			if targets[i].Name == name {
				targets[i].To, targets[i].Why = to, why
			}
		}
	}
	var active []Set
	for _, s := range live {
		if s.active() {
			active = append(active, s)
		}
	}
	adder := scaleOutTarget(in, live, active)
	switch {
	case len(active) == 0:
		set(adder.Name, in.Replicas, "scale: no active set, the newest gets replicas")
	case saturated(in):
		for _, s := range active {
			if s.Name != in.New.Name {
				set(s.Name, 0, "scale: the new set is saturated")
			}
		}
	case len(active) == 1 && active[0].Name == adder.Name:
		set(adder.Name, in.Replicas, "scale: the only active set")
	default:
		budget := int32(0)
		if in.Replicas > 0 {
			budget = in.Replicas + in.MaxSurge
		}
		toAdd := budget - sum(active, func(s Set) int32 { return s.Spec })
		switch {
		case toAdd > 0:
			set(adder.Name, max(adder.Spec, min(adder.Spec+toAdd, in.Replicas)), fmt.Sprintf("scale-out: +%d to the newest template", toAdd))
		case toAdd < 0:
			for name, size := range proportionalScaleDown(in, active, toAdd) {
				set(name, size, fmt.Sprintf("scale-in: %d in proportion", toAdd))
			}
		}
	}
	return capGrowth(in, targets)
}

// capGrowth holds a growth to what the surge budget has room for, counting
// Machines that still exist (or are not being deleted, TerminationStarted):
// scaling out while old Machines are still draining must not make the
// fleet exceed replicas + maxSurge. The rest comes when they are gone.
func capGrowth(in Input, targets []Target) []Target {
	fleet := int32(0)
	for _, o := range in.Old {
		if o.Deleting {
			fleet += o.footprint(in.Policy, 0)
		}
	}
	for _, t := range targets {
		fleet += in.set(t.Name).footprint(in.Policy, min(t.From, t.To))
	}
	limit := in.Replicas + in.MaxSurge
	room := limit - fleet
	for i := range targets {
		t := &targets[i]
		if t.To <= t.From {
			continue
		}
		s := in.set(t.Name)
		// Growing to the Machines it still has costs nothing more.
		capped := max(t.From, min(t.To, max(t.From, s.live())+max(room, 0)))
		if capped < t.To {
			t.Why += fmt.Sprintf("; held at %d by the surge budget (footprint %d of %d)", capped, fleet, limit)
			t.To, t.held = capped, true
		}
		room -= s.footprint(in.Policy, t.To) - s.footprint(in.Policy, t.From)
	}
	return targets
}

// scaleOutTarget is the set that receives added Machines: the new set;
// while paused and before the new set got any Machine, the newest old set
// instead, so a pause never starts a rollout.
func scaleOutTarget(in Input, live, active []Set) Set {
	if in.New != nil && (!in.Paused || in.New.active()) {
		return *in.New
	}
	var activeOld, old []Set
	for _, s := range live {
		if in.New != nil && s.Name == in.New.Name {
			continue
		}
		old = append(old, s)
		if s.active() {
			activeOld = append(activeOld, s)
		}
	}
	if len(activeOld) > 0 {
		return newest(activeOld)
	}
	if len(old) > 0 {
		return newest(old)
	}
	return *in.New
}

// newest is the set with the highest revision, the latest created on ties.
func newest(sets []Set) Set {
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
func saturated(in Input) bool {
	s := in.New
	return s != nil && s.Spec == in.Replicas && s.HasDesired && s.Desired == in.Replicas && s.Available >= in.Replicas
}

// proportionalScaleDown removes -toAdd Machines from the active sets in
// proportion to their sizes, as Kubernetes does: largest set first, older
// first on ties, each shrunk to round(spec × budget / its max-replicas
// annotation, or status.replicas without one), the rounding leftover taken
// from the first (largest) set, none below 0.
func proportionalScaleDown(in Input, active []Set, toAdd int32) map[string]int32 {
	sorted := append([]Set(nil), active...)
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
func fraction(in Input, s Set) int32 {
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
