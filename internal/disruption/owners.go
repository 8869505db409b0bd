package disruption

import (
	"fmt"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

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

func (g *ownerGroup) add(m *v1alpha1.Machine, granted bool) {
	if !m.DeletionTimestamp.IsZero() {
		g.deleting++
		return
	}
	g.live++
	down, _ := machinefacts.Unavailable(m)
	switch {
	case down && machinefacts.CordonedInPlace(m):
		g.cordoned++
	case down:
	case granted:
		g.granted++
	default:
		g.healthy++
	}
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

// groupByOwner makes a group for every owner whose counted Machines in the
// namespace the budget all selects. An owner only some of whose Machines
// are selected gets none: its size says nothing of the selected part, so
// those Machines count alone.
func groupByOwner(namespace string, machines []*v1alpha1.Machine, selected map[string]*v1alpha1.Machine, owners Owners) map[string]*ownerGroup {
	if owners == nil {
		return nil
	}
	groups := map[string]*ownerGroup{}
	partial := map[string]bool{}
	for _, m := range machines {
		if m.Namespace != namespace || !counted(m) {
			continue
		}
		key, replicas, ok := owners(m)
		if !ok {
			continue
		}
		if selected[m.Name] == nil {
			partial[key] = true
			continue
		}
		if groups[key] == nil {
			groups[key] = &ownerGroup{replicas: replicas}
		}
	}
	for key := range partial {
		delete(groups, key)
	}
	return groups
}

// ownerKey is the Machine's owner key, "" for none.
func ownerKey(m *v1alpha1.Machine, owners Owners) string {
	if owners == nil {
		return ""
	}
	key, _, ok := owners(m)
	if !ok {
		return ""
	}
	return key
}
