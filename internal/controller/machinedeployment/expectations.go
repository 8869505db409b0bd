package machinedeployment

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// expectationTTL bounds how long a write may take to show in the cache
// before it is presumed lost.
const expectationTTL = time.Minute

// expectations remember this controller's own writes to MachineSets until
// the cache shows them. Deciding from a cache that still shows a set before
// our last scale would count Machines twice or not at all (a set just
// scaled down still reporting its old availability, a set just created
// missing), so a reconcile waits until its last writes are visible.
type expectations struct {
	mu    sync.Mutex
	byKey map[string]*pending
}

type pending struct {
	generations map[types.UID]int64
	// lists are the in-place lists last written per set: a write of
	// lists only changes no generation (see expectLists).
	lists   map[types.UID]string
	created map[string]bool
	since   time.Time
}

func (e *expectations) get(key string) *pending {
	if e.byKey == nil {
		e.byKey = map[string]*pending{}
	}
	p := e.byKey[key]
	if p == nil {
		p = &pending{generations: map[types.UID]int64{}, lists: map[types.UID]string{}, created: map[string]bool{}}
		e.byKey[key] = p
	}
	p.since = time.Now()
	return p
}

// expectGeneration records that the set now has generation gen.
func (e *expectations) expectGeneration(key string, uid types.UID, gen int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).generations[uid] = gen
}

// expectLists records that the set's in-place lists are now lists (see
// inPlaceLists): deciding from a set still showing a Machine moving that
// has arrived, or not yet showing one that left, would undo a move.
func (e *expectations) expectLists(key string, uid types.UID, lists string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).lists[uid] = lists
}

// inPlaceLists is a set's two in-place lists as one string.
func inPlaceLists(ms *v1alpha1.MachineSet) string {
	return ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation] + "|" + ms.Annotations[v1alpha1.InPlaceMovingInAnnotation]
}

// expectCreated records that a set named name was created.
func (e *expectations) expectCreated(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).created[name] = true
}

// satisfied reports whether the cache's sets show every recorded write,
// forgetting those it shows.
func (e *expectations) satisfied(key string, sets []*v1alpha1.MachineSet) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.byKey[key]
	if p == nil {
		return true
	}
	if time.Since(p.since) > expectationTTL {
		delete(e.byKey, key)
		return true
	}
	seen := map[types.UID]bool{}
	for _, ms := range sets {
		seen[ms.UID] = true
		delete(p.created, ms.Name)
		if gen, ok := p.generations[ms.UID]; ok && ms.Generation >= gen {
			delete(p.generations, ms.UID)
		}
		if lists, ok := p.lists[ms.UID]; ok && inPlaceLists(ms) == lists {
			delete(p.lists, ms.UID)
		}
	}
	for uid := range p.generations {
		if !seen[uid] {
			delete(p.generations, uid) // the set is gone
		}
	}
	for uid := range p.lists {
		if !seen[uid] {
			delete(p.lists, uid)
		}
	}
	if len(p.created) == 0 && len(p.generations) == 0 && len(p.lists) == 0 {
		delete(e.byKey, key)
		return true
	}
	return false
}

// drop forgets a deployment's expectations (it is gone).
func (e *expectations) drop(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}
