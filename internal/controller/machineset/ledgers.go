package machineset

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// ledgers keeps each set's ledger between its reconciles, and the names
// of the Machines whose events arrived since. A reconcile takes both and
// reads only those Machines from the cache (collect).
//
// The watch that wakes a set for a Machine event is this store's own
// handler (machineEvents), which records the name before it enqueues: a
// reconcile woken by an event always finds the name here. It reads the
// Machine from the cache, not from the event: the informer writes its
// store before it hands an event on, so an event may arrive after a
// reconcile read a newer version, and applied as it came it would take
// the Machine back to an older state (one being deleted counted alive
// again). Read from the cache, a Machine is never older than its last
// read.
type ledgers struct {
	mu     sync.Mutex
	bySet  map[types.NamespacedName]*ledger
	events map[types.NamespacedName]map[string]bool
}

// note records that the Machine name of set changed.
func (ls *ledgers) note(set types.NamespacedName, name string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.events == nil {
		ls.events = map[types.NamespacedName]map[string]bool{}
	}
	if ls.events[set] == nil {
		ls.events[set] = map[string]bool{}
	}
	ls.events[set][name] = true
}

// take hands set's ledger (nil when none is kept) and the names of the
// Machines changed since it was kept to the set's reconcile, which keeps
// the ledger again once it is up to date (keep); the next events wait
// for the next reconcile.
func (ls *ledgers) take(set types.NamespacedName) (*ledger, map[string]bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, events := ls.bySet[set], ls.events[set]
	delete(ls.bySet, set)
	delete(ls.events, set)
	return l, events
}

// keep keeps l as set's ledger until the next reconcile.
func (ls *ledgers) keep(set types.NamespacedName, l *ledger) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.bySet == nil {
		ls.bySet = map[types.NamespacedName]*ledger{}
	}
	ls.bySet[set] = l
}

// forget drops a set that is gone.
func (ls *ledgers) forget(set types.NamespacedName) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	delete(ls.bySet, set)
	delete(ls.events, set)
}

// machineEvents records each Machine event in the ledgers of the sets it
// concerns (machineToSets, of the Machine before and after an update:
// a Machine leaving a set concerns it too), then wakes those sets.
type machineEvents struct{ r *Reconciler }

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h machineEvents) Create(ctx context.Context, e event.CreateEvent, q requestQueue) {
	h.noted(ctx, q, e.Object)
}

func (h machineEvents) Update(ctx context.Context, e event.UpdateEvent, q requestQueue) {
	h.noted(ctx, q, e.ObjectOld, e.ObjectNew)
}

func (h machineEvents) Delete(ctx context.Context, e event.DeleteEvent, q requestQueue) {
	h.noted(ctx, q, e.Object)
}

func (h machineEvents) Generic(ctx context.Context, e event.GenericEvent, q requestQueue) {
	h.noted(ctx, q, e.Object)
}

// noted records the Machine of versions in the ledgers of the sets each
// version maps to, and enqueues them.
func (h machineEvents) noted(ctx context.Context, q requestQueue, versions ...client.Object) {
	seen := map[reconcile.Request]bool{}
	for _, o := range versions {
		if _, ok := o.(*v1alpha1.Machine); !ok {
			continue
		}
		for _, req := range h.r.machineToSets(ctx, o) {
			if seen[req] {
				continue
			}
			seen[req] = true
			h.r.ledgers.note(req.NamespacedName, o.GetName())
			q.Add(req)
		}
	}
}
