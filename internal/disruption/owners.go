package disruption

import "fmt"

// ownerGroup is the selected Machines of one owner that a budget selects
// wholly, counted against the owner's spec.replicas.
type ownerGroup struct {
	replicas int32
	// healthy: not being deleted, available, no pending grant.
	healthy int32
	// deleting, cordoned and granted: disrupted by Millwright — going
	// away, cordoned by an in-place update — or about to be (a pending
	// grant of an available Machine).
	deleting, cordoned, granted int32
	// live: not being deleted, available or not.
	live int32
}

// unavailable is the larger of how far the owner is below its size
// (missing, failed, not Ready, cordoned or granted Machines: replicas −
// healthy) and how many of its Machines Millwright disrupts (being
// deleted, cordoned by an in-place update, or granted). The first counts a
// replacement that failed to be created; the second, a scale-down's
// drains, which leave the owner at its size, and an in-place update while
// the owner has more Machines than its size (a scale-down not done yet),
// which the first would not see; a Machine being replaced and its
// replacement not yet Ready count once.
func (g *ownerGroup) unavailable() int32 {
	return max(g.replicas-g.healthy, g.deleting+g.cordoned+g.granted, 0)
}

// expected is the owner's size; for an owner scaled to 0 (or being
// deleted), the Machines it still has: they drain under the budget too,
// which a base of 0 would hold back for good.
func (g *ownerGroup) expected() int32 {
	if g.replicas == 0 {
		return g.live
	}
	return g.replicas
}

func (g *ownerGroup) why() string {
	s := fmt.Sprintf("%d of %d wanted healthy", g.healthy, g.replicas)
	if missing := g.replicas - g.live; missing > 0 {
		s += fmt.Sprintf(", %d missing", missing)
	}
	if g.deleting > 0 {
		s += fmt.Sprintf(", %d being deleted", g.deleting)
	}
	if g.cordoned > 0 {
		s += fmt.Sprintf(", %d cordoned by an in-place update", g.cordoned)
	}
	if g.granted > 0 {
		s += fmt.Sprintf(", %d granted a disruption", g.granted)
	}
	return s
}
