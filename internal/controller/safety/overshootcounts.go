package safety

import (
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// machineCounts keeps, per MachineSet, what the overshoot check counts
// of its Machines, from the Machine informer's events
// (changed.SetCounts): a check woken by a create reads a sum instead of
// every Machine of its owner. Counting every Machine at each check
// (coalesced to one a second per owner) was the one read of a whole
// owner left at Machine events: at 5000 Machines, 0.55 ms of the
// manager's CPU per Machine of a scale-up (docs/benchmarks.md, "Constant
// work per event").
//
// The counts share nothing with the controllers the check guards. A
// check still counts every Machine of its owner once per overshooting
// period (overshoot.count), which bounds how long a count gone wrong
// could last.
type machineCounts struct {
	// period: a Machine created within it of its event is young (it
	// makes its owner growing).
	period time.Duration
	now    func() time.Time

	// synced: every Machine the informer held when the counting watch
	// started has been counted. The set's check marks it at its first
	// reconcile: controller-runtime starts a controller's workers only
	// once its watches' handlers have been handed every object. Until
	// then a check (the deployment's, whose own watch may be ahead)
	// counts every Machine.
	synced atomic.Bool

	sets *changed.SetCounts[*setCount]
}

// setCount is what the check counts of one set's Machines.
type setCount struct {
	machines int32
	// young are the counted Machines created within the period of their
	// event, by name, and when; older ones are dropped when read.
	young map[string]time.Time
}

func newMachineCounts(period time.Duration, now func() time.Time) *machineCounts {
	c := &machineCounts{period: period, now: now}
	c.sets = changed.NewSetCounts(counts, c.added, removed)
	return c
}

// added adds m to s (nil: none kept).
func (c *machineCounts) added(s *setCount, m *v1alpha1.Machine) *setCount {
	if s == nil {
		s = &setCount{young: map[string]time.Time{}}
	}
	s.machines++
	if created := m.CreationTimestamp.Time; c.now().Sub(created) < c.period {
		s.young[m.Name] = created
	}
	return s
}

// removed takes m off s, and reports whether s counts none.
func removed(s *setCount, m *v1alpha1.Machine) (*setCount, bool) {
	s.machines--
	delete(s.young, m.Name)
	return s, s.machines == 0
}

// add adds the kept count of the set uid to n.
func (c *machineCounts) add(uid types.UID, n *groupCount) {
	c.sets.Read(uid, func(s *setCount) {
		if s == nil {
			return
		}
		n.machines += s.machines
		now := c.now()
		for name, created := range s.young {
			if now.Sub(created) >= c.period {
				delete(s.young, name) // old now, and for good
			} else if created.After(n.newest) {
				n.newest = created
			}
		}
	})
}

// counts says whether the check counts m, one of a set's Machines: it is
// not being deleted nor preserved (a preserved Machine was replaced on
// purpose, and the limits that bound how many exist bound it instead,
// docs/preservation.md).
func counts(m *v1alpha1.Machine) bool {
	return m.DeletionTimestamp.IsZero() && !machinefacts.Preserved(m)
}
