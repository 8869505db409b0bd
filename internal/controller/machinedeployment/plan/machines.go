package plan

import (
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// Count counts a set's Machines as of now. A Machine is available as
// machinefacts.Available says, with minReady; supersededAt (zero:
// unknown) is when an OnDelete set was superseded. next is how long until
// the first Ready Machine becomes available (0: none pending), when the
// deployment must look again.
func Count(machines []*v1alpha1.Machine, minReady time.Duration, now, supersededAt time.Time) (c Counts, next time.Duration) {
	var order deleteOrder
	for _, m := range machines {
		if m.DeletionTimestamp.IsZero() && machinefacts.Preserved(m) {
			continue // kept, and replaced: neither a replica nor a surge Machine (docs/preservation.md)
		}
		c.Machines++
		if !m.DeletionTimestamp.IsZero() {
			c.Terminating++
			continue
		}
		// A replacement created after the set was superseded is not left
		// (see docs/rollout.md, OnDelete): it is the one removed first.
		if supersededAt.IsZero() || !m.CreationTimestamp.After(supersededAt) {
			c.Left++
		}
		if m.Status.FailureReason != "" {
			// Deleted and replaced by its set whatever the set's size:
			// never one of the Machines a scale-down picks.
			c.Failed++
			continue
		}
		left, ok := machinefacts.UntilAvailable(m, minReady, now)
		available := ok && left <= 0
		order.add(machinefacts.DeleteGroupOf(m), available)
		switch {
		case !ok:
		case available:
			c.Available++
		case next == 0 || left < next:
			next = left
		}
	}
	c.AvailableAhead = order.availableAhead()
	return c, next
}

// deleteOrder tallies a set's live Machines that have not failed by
// machinefacts.DeleteGroup, the order in which a scale-down takes them.
// Most sets have one group (no annotations): the tally then never
// allocates.
type deleteOrder struct {
	groups []groupTally
}

type groupTally struct {
	group                  machinefacts.DeleteGroup
	available, unavailable int32
}

func (o *deleteOrder) add(g machinefacts.DeleteGroup, available bool) {
	i := 0
	for i < len(o.groups) && o.groups[i].group != g {
		i++
	}
	if i == len(o.groups) {
		o.groups = append(o.groups, groupTally{group: g})
	}
	if available {
		o.groups[i].available++
	} else {
		o.groups[i].unavailable++
	}
}

// availableAhead is how many available Machines are in groups a
// scale-down takes before the last group holding an unavailable Machine:
// within a group the unavailable ones go first, so these are the
// available Machines a scale-down may delete before its unavailable ones.
func (o *deleteOrder) availableAhead() int32 {
	last := -1
	for i, t := range o.groups {
		if t.unavailable > 0 && (last < 0 || t.group.Compare(o.groups[last].group) > 0) {
			last = i
		}
	}
	if last < 0 {
		return 0
	}
	var n int32
	for _, t := range o.groups {
		if t.group.Compare(o.groups[last].group) < 0 {
			n += t.available
		}
	}
	return n
}
