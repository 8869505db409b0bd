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

// ledgers keeps each set's ledger between its reconciles, and the Machine
// events that arrived since: the newest version of each Machine the
// events named (nil: deleted). A reconcile takes both and brings the
// ledger up to date with the events alone (collect).
//
// The events come from the informer that fills the cache, in its order,
// and the watch that wakes a set for a Machine event is this store's own
// handler (machineEvents), which records the event before it enqueues:
// a reconcile woken by an event always finds it here.
type ledgers struct {
	mu     sync.Mutex
	bySet  map[types.NamespacedName]*ledger
	events map[types.NamespacedName]map[string]*v1alpha1.Machine
}

// note records the newest version m of the Machine name for set (nil: it
// is gone).
func (ls *ledgers) note(set types.NamespacedName, name string, m *v1alpha1.Machine) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.events == nil {
		ls.events = map[types.NamespacedName]map[string]*v1alpha1.Machine{}
	}
	if ls.events[set] == nil {
		ls.events[set] = map[string]*v1alpha1.Machine{}
	}
	ls.events[set][name] = m
}

// take hands set's ledger (nil when none is kept) and the events since
// it was kept to the set's reconcile, which keeps the ledger again once
// it is up to date (keep); the next events wait for the next reconcile.
func (ls *ledgers) take(set types.NamespacedName) (*ledger, map[string]*v1alpha1.Machine) {
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
	h.noted(ctx, q, e.Object, e.Object)
}

func (h machineEvents) Update(ctx context.Context, e event.UpdateEvent, q requestQueue) {
	h.noted(ctx, q, e.ObjectNew, e.ObjectOld, e.ObjectNew)
}

func (h machineEvents) Delete(ctx context.Context, e event.DeleteEvent, q requestQueue) {
	h.noted(ctx, q, nil, e.Object)
}

func (h machineEvents) Generic(ctx context.Context, e event.GenericEvent, q requestQueue) {
	h.noted(ctx, q, e.Object, e.Object)
}

// noted records now (nil: deleted) in the ledgers of the sets each of
// versions maps to, and enqueues them.
func (h machineEvents) noted(ctx context.Context, q requestQueue, now client.Object, versions ...client.Object) {
	var m *v1alpha1.Machine
	if now != nil {
		var ok bool
		if m, ok = now.(*v1alpha1.Machine); !ok {
			return
		}
	}
	seen := map[reconcile.Request]bool{}
	for _, o := range versions {
		if o == nil {
			continue
		}
		for _, req := range h.r.machineToSets(ctx, o) {
			if seen[req] {
				continue
			}
			seen[req] = true
			h.r.ledgers.note(req.NamespacedName, o.GetName(), m)
			q.Add(req)
		}
	}
}
