package machineset

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// zoneCounts keeps, per MachineSet (by UID), its Machines that count in
// their zones (counted) by zone, from the Machine informer's events: a
// set placing or removing Machines reads its siblings' sums instead of
// every Machine they have. Reading them was the set's one read of a
// whole deployment at each of its events during a rollout with zones
// (docs/benchmarks.md, "Constant work per event").
//
// The counts follow the event stream alone: each update takes the old
// version's part off and adds the new one's. The informer hands every
// object to a watch before the controller's workers start, so the first
// reconcile reads complete counts; after that a count is as fresh as the
// events the watch was handed, a moment behind the cache at most, which
// a set tolerates as it does the cache being behind the API server.
type zoneCounts struct {
	mu   sync.Mutex
	sets map[types.UID]map[string]int32
}

// apply takes old's part (nil: a creation) off the counts and adds new's
// (nil: a deletion).
func (c *zoneCounts) apply(old, new *v1alpha1.Machine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if set, ok := countedInZone(old); ok && c.sets[set] != nil { // nil only for a stream that skipped old's version
		zones := c.sets[set]
		if zones[old.Spec.FailureDomain]--; zones[old.Spec.FailureDomain] <= 0 {
			delete(zones, old.Spec.FailureDomain)
		}
		if len(zones) == 0 {
			delete(c.sets, set)
		}
	}
	if set, ok := countedInZone(new); ok {
		if c.sets == nil {
			c.sets = map[types.UID]map[string]int32{}
		}
		if c.sets[set] == nil {
			c.sets[set] = map[string]int32{}
		}
		c.sets[set][new.Spec.FailureDomain]++
	}
}

// addTo adds the counts of the set uid to each map of into.
func (c *zoneCounts) addTo(uid types.UID, into ...map[string]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for zone, n := range c.sets[uid] {
		for _, m := range into {
			m[zone] += n
		}
	}
}

// countedInZone is the UID of the MachineSet controlling m, when m counts
// in its zone (counted).
func countedInZone(m *v1alpha1.Machine) (types.UID, bool) {
	if m == nil || !counted(m) {
		return "", false
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != "MachineSet" {
		return "", false
	}
	return ref.UID, true
}

// counting is the Machine watch that keeps the counts; it wakes no set
// (the ledger's watch does).
func (c *zoneCounts) counting() handler.TypedEventHandler[client.Object, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	machine := func(o client.Object) *v1alpha1.Machine {
		m, _ := o.(*v1alpha1.Machine)
		return m
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ queue) { c.apply(nil, machine(e.Object)) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ queue) {
			c.apply(machine(e.ObjectOld), machine(e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ queue) { c.apply(machine(e.Object), nil) },
	}
}
