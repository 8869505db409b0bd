package machinedeployment

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// tallies keeps each MachineSet's Machines counted as the planner counts
// them (plan.Tally), by the set's uid, from the Machine informer's events:
// a reconcile reads its sets' counts without reading their Machines, so
// the cost of one Machine event does not grow with the fleet (at 5000
// Machines, recounting every set at each event was a third of the
// manager's CPU, docs/benchmarks.md).
//
// The counts are the cache's: the events come from the informer that
// fills the cache, in its order, and the watch that wakes the deployment
// for a Machine event is this store's own handler (tallyHandler), which
// counts the event before it enqueues. A reconcile woken by an event so
// always counts it; it may count newer events too, as a read of the cache
// would.
type tallies struct {
	mu sync.Mutex
	// bySet counts each set's Machines; a set without Machines has none.
	bySet map[types.UID]*plan.Tally
	// setOf is the set each Machine is counted in; waitsInPlace are the
	// Machines waiting for a budget's grant for an in-place update, by set
	// (releaseUnwanted reads only those).
	setOf        map[types.UID]types.UID
	waitsInPlace map[types.UID]map[types.UID]bool
}

func newTallies() *tallies {
	return &tallies{bySet: map[types.UID]*plan.Tally{}, setOf: map[types.UID]types.UID{}, waitsInPlace: map[types.UID]map[types.UID]bool{}}
}

// set counts m as it is now; changed says whether a set's counts may
// have moved (its set, or what the planner counts of it, changed).
func (t *tallies) set(m *v1alpha1.Machine) (changed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var set types.UID
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		set = ref.UID
	}
	if old, ok := t.setOf[m.UID]; ok && old != set {
		t.forgetLocked(m.UID)
		changed = true
	}
	if set == "" {
		return changed
	}
	t.setOf[m.UID] = set
	tally := t.bySet[set]
	if tally == nil {
		tally = plan.NewTally()
		t.bySet[set] = tally
	}
	if tally.Set(m) {
		changed = true
	}
	kind, waits := disruption.Waiting(m)
	if waits && kind == v1alpha1.DisruptionInPlaceUpdate && m.DeletionTimestamp.IsZero() {
		if t.waitsInPlace[set] == nil {
			t.waitsInPlace[set] = map[types.UID]bool{}
		}
		t.waitsInPlace[set][m.UID] = true
	} else {
		t.dropWaiting(set, m.UID)
	}
	return changed
}

// forget drops a deleted Machine.
func (t *tallies) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(uid)
}

func (t *tallies) forgetLocked(uid types.UID) {
	set, ok := t.setOf[uid]
	if !ok {
		return
	}
	delete(t.setOf, uid)
	t.dropWaiting(set, uid)
	if tally := t.bySet[set]; tally != nil {
		tally.Forget(uid)
		if tally.Len() == 0 {
			delete(t.bySet, set)
		}
	}
}

func (t *tallies) dropWaiting(set, uid types.UID) {
	if w := t.waitsInPlace[set]; w != nil {
		delete(w, uid)
		if len(w) == 0 {
			delete(t.waitsInPlace, set)
		}
	}
}

// counts is plan.Count of the set's Machines.
func (t *tallies) counts(set types.UID, minReady time.Duration, now, supersededAt time.Time) (plan.Counts, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tally := t.bySet[set]
	if tally == nil {
		return plan.Counts{}, 0
	}
	return tally.Counts(minReady, now, supersededAt)
}

// machines is how many Machines the set has, preserved and deleting ones
// included.
func (t *tallies) machines(set types.UID) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tally := t.bySet[set]; tally != nil {
		return tally.Len()
	}
	return 0
}

// waiting reports whether a Machine of the set waits for an in-place
// update's grant.
func (t *tallies) waiting(set types.UID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waitsInPlace[set]) > 0
}

// tallyHandler counts every Machine event in tallies, then hands it to
// next when it may change what the deployment decides: the counts moved,
// or pass lets it through (machineCounted).
type tallyHandler struct {
	tallies *tallies
	next    handler.EventHandler
	pass    predicate.Predicate
}

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h tallyHandler) Create(ctx context.Context, e event.CreateEvent, q requestQueue) {
	if m, ok := e.Object.(*v1alpha1.Machine); ok {
		h.tallies.set(m)
	}
	h.next.Create(ctx, e, q)
}

func (h tallyHandler) Update(ctx context.Context, e event.UpdateEvent, q requestQueue) {
	changed := false
	if m, ok := e.ObjectNew.(*v1alpha1.Machine); ok {
		changed = h.tallies.set(m)
	}
	if changed || h.pass.Update(e) {
		h.next.Update(ctx, e, q)
	}
}

func (h tallyHandler) Delete(ctx context.Context, e event.DeleteEvent, q requestQueue) {
	h.tallies.forget(e.Object.GetUID())
	h.next.Delete(ctx, e, q)
}

func (h tallyHandler) Generic(ctx context.Context, e event.GenericEvent, q requestQueue) {
	h.next.Generic(ctx, e, q)
}
