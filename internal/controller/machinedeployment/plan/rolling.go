package plan

import "fmt"

// rolling is one wave of a rolling update, as in Kubernetes but with both
// halves in the same reconcile:
//
//   - old sets shrink (oldest first) as far as availability allows: first
//     by their Machines that are not available and that the set's
//     scale-down takes before any available one (see Set.unavailableFirst),
//     as far as Σ old spec + the new set's available − (replicas −
//     maxUnavailable) allows (removing them costs no availability, and a
//     stuck old Machine would otherwise block the rollout); then by
//     available ones, while more than replicas − maxUnavailable stay
//     available, counting what the scale-down takes (Set.sureAvailable);
//   - the new set grows while the fleet's footprint (see Set.footprint) is
//     below replicas + maxSurge, never past replicas; above replicas
//     (scaled in) it is cut to replicas.
//
// Shrinking first frees no surge at once: an old Machine counts until it
// is gone (TerminationComplete) or its deletion starts (TerminationStarted),
// and that Machine event wakes the next wave.
func rolling(in Input) []Target {
	newSet := Set{}
	if in.New != nil {
		newSet = *in.New
	}
	minAvailable := in.Replicas - in.MaxUnavailable
	newAvailable := newSet.sureAvailable(newSet.spec())

	targets := make([]Target, len(in.Old))
	var oldSpec int32
	for i, o := range in.Old {
		targets[i] = Target{Name: o.Name, From: o.spec(), To: o.spec()}
		oldSpec += o.spec()
	}
	if maxScaledDown := oldSpec + newAvailable - minAvailable; maxScaledDown > 0 && oldSpec > 0 {
		var cleaned int32
		for i, o := range in.Old {
			if n := min(maxScaledDown-cleaned, o.unavailableFirst(targets[i].To)); n > 0 {
				targets[i].To -= n
				cleaned += n
				targets[i].Why = fmt.Sprintf("%d not available removed", n)
			}
		}
	}
	available := newAvailable
	for i, o := range in.Old {
		available += o.sureAvailable(targets[i].To)
	}
	budget := available - minAvailable
	for i := range in.Old {
		n := min(targets[i].To, budget)
		if n <= 0 {
			continue
		}
		targets[i].To -= n
		budget -= n
		targets[i].Why = join(targets[i].Why, fmt.Sprintf("%d available removed (%d available, floor %d)", n, available, minAvailable))
	}
	for i := range targets {
		if targets[i].Why == "" && targets[i].From > 0 {
			targets[i].Why = fmt.Sprintf("held: %d available, floor %d", available, minAvailable)
		}
	}

	var fleet int32
	for i, o := range in.Old {
		fleet += o.footprint(in.Policy, targets[i].To)
	}
	fleet += newSet.footprint(in.Policy, newSet.spec())
	limit := in.Replicas + in.MaxSurge
	to, why := newSet.spec(), ""
	switch room := limit - fleet; {
	case to >= in.Replicas:
		to, why = in.Replicas, "at replicas"
	case room <= 0:
		why = fmt.Sprintf("surge spent (footprint %d of %d)", fleet, limit)
	default:
		to += min(room, in.Replicas-to)
		why = fmt.Sprintf("grown within surge (footprint %d of %d)", fleet+to-newSet.spec(), limit)
	}
	return append(targets, in.newTarget(to, why))
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
