package changed

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// SetCounts keeps a V per MachineSet (by UID) made of the Machines it
// controls, from the Machine informer's events: a reader reads one set's
// V instead of every Machine the set has, so the work of one event does
// not grow with the fleet (docs/benchmarks.md, "Constant work per
// event").
//
// The counts follow the event stream alone, not the cache's reads: each
// update takes the old version's part off and adds the new one's. The
// informer hands every object to a watch before the controller's workers
// start, so the controller's first reconcile reads complete counts;
// after that a count is as fresh as the events its watch was handed, a
// moment behind the cache at most.
type SetCounts[V any] struct {
	counts func(*v1alpha1.Machine) bool
	add    func(V, *v1alpha1.Machine) V
	remove func(V, *v1alpha1.Machine) (V, bool)

	mu   sync.Mutex
	sets map[types.UID]V
}

// NewSetCounts keeps, per MachineSet, a V of its Machines that counts
// says count: add adds a Machine's part to a set's V (the zero V when
// the set has none kept) and returns it; remove takes the part off,
// returns what is left and whether that is nothing (the set's V is then
// dropped).
func NewSetCounts[V any](counts func(*v1alpha1.Machine) bool, add func(V, *v1alpha1.Machine) V,
	remove func(V, *v1alpha1.Machine) (V, bool)) *SetCounts[V] {
	return &SetCounts[V]{counts: counts, add: add, remove: remove, sets: map[types.UID]V{}}
}

// Apply takes old's part (nil: a creation) off the counts and adds new's
// (nil: a deletion).
func (c *SetCounts[V]) Apply(old, new *v1alpha1.Machine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if set, ok := c.countedIn(old); ok {
		// Not kept only for a stream that skipped old's version.
		if v, kept := c.sets[set]; kept {
			if v, empty := c.remove(v, old); empty {
				delete(c.sets, set)
			} else {
				c.sets[set] = v
			}
		}
	}
	if set, ok := c.countedIn(new); ok {
		c.sets[set] = c.add(c.sets[set], new)
	}
}

// Read calls f with the set uid's V (the zero V when none is kept) under
// the counts' lock: f may change what V holds, never keep it.
func (c *SetCounts[V]) Read(uid types.UID, f func(V)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.sets[uid])
}

// countedIn is the UID of the MachineSet controlling m, when m counts.
func (c *SetCounts[V]) countedIn(m *v1alpha1.Machine) (types.UID, bool) {
	if m == nil {
		return "", false
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != "MachineSet" || !c.counts(m) {
		return "", false
	}
	return ref.UID, true
}

// Handler is the Machine watch that keeps the counts; each event is then
// handed to wake (nil: the watch wakes nothing), so a reconcile it wakes
// reads counts with that event in them.
func (c *SetCounts[V]) Handler(wake handler.EventHandler) handler.EventHandler {
	if wake == nil {
		wake = handler.Funcs{}
	}
	machine := func(o client.Object) *v1alpha1.Machine {
		m, _ := o.(*v1alpha1.Machine)
		return m
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			c.Apply(nil, machine(e.Object))
			wake.Create(ctx, e, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			c.Apply(machine(e.ObjectOld), machine(e.ObjectNew))
			wake.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			c.Apply(machine(e.Object), nil)
			wake.Delete(ctx, e, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { wake.Generic(ctx, e, q) },
	}
}
