package safety

import (
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// machineCounts keeps, per MachineSet (by UID), what the overshoot check
// counts of its Machines, from the Machine informer's events: a check
// woken by a create reads a sum instead of every Machine of its owner.
// Counting every Machine at each check (coalesced to one a second per
// owner) was the one read of a whole owner left at Machine events: at
// 5000 Machines, 0.55 ms of the manager's CPU per Machine of a scale-up
// (docs/benchmarks.md, "Constant work per event").
//
// The counts follow the event stream alone (each update takes the old
// version's part off and adds the new one's), not the cache's reads,
// and share nothing with the controllers the check guards. A check
// still counts every Machine of its owner once per overshooting period
// (overshoot.fullCount), which bounds how long a count gone wrong could
// last.
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

	mu   sync.Mutex
	sets map[types.UID]*setCount
}

// setCount is what the check counts of one set's Machines.
type setCount struct {
	machines int32
	// young are the counted Machines created within the period of their
	// event, by name, and when; older ones are dropped when read.
	young map[string]time.Time
}

// apply takes old's part (nil: a creation) off the counts and adds new's
// (nil: a deletion).
func (c *machineCounts) apply(old, new *v1alpha1.Machine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if before, ok := countedIn(old); ok && c.sets[before] != nil { // nil only for a stream that skipped old's version
		s := c.sets[before]
		s.machines--
		delete(s.young, old.Name)
		if s.machines == 0 {
			delete(c.sets, before)
		}
	}
	if after, ok := countedIn(new); ok {
		if c.sets == nil {
			c.sets = map[types.UID]*setCount{}
		}
		s := c.sets[after]
		if s == nil {
			s = &setCount{young: map[string]time.Time{}}
			c.sets[after] = s
		}
		s.machines++
		if created := new.CreationTimestamp.Time; c.now().Sub(created) < c.period {
			s.young[new.Name] = created
		}
	}
}

// add adds the kept count of the set uid to n.
func (c *machineCounts) add(uid types.UID, n *groupCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sets[uid]
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
}

// countedIn is the UID of the MachineSet controlling m, when the check
// counts m: it exists, is not being deleted nor preserved (a preserved
// Machine was replaced on purpose, and the limits that bound how many
// exist bound it instead, docs/preservation.md).
func countedIn(m *v1alpha1.Machine) (types.UID, bool) {
	if m == nil || !m.DeletionTimestamp.IsZero() || machinefacts.Preserved(m) {
		return "", false
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != "MachineSet" {
		return "", false
	}
	return ref.UID, true
}
