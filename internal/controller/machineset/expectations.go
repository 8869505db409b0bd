package machineset

import (
	"sync"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// expectationTTL bounds how long a create or delete may take to show up in
// the cache before it is assumed lost.
const expectationTTL = 5 * time.Minute

// expectations remember, per MachineSet, the Machines it created or
// deleted that its cache does not show yet. While any is outstanding the
// MachineSet neither creates nor deletes: acting on a stale cache is how
// controllers create the same Machine twice.
type expectations struct {
	mu  sync.Mutex
	set map[string]*pending
}

type pending struct {
	creates, deletes map[string]time.Time
}

func (e *expectations) get(key string) *pending {
	if e.set == nil {
		e.set = map[string]*pending{}
	}
	p := e.set[key]
	if p == nil {
		p = &pending{creates: map[string]time.Time{}, deletes: map[string]time.Time{}}
		e.set[key] = p
	}
	return p
}

func (e *expectations) expectCreate(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).creates[name] = time.Now()
}

func (e *expectations) expectDelete(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).deletes[name] = time.Now()
}

// forget drops an expectation whose call failed.
func (e *expectations) forget(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	delete(p.creates, name)
	delete(p.deletes, name)
}

// satisfied reports whether the cache (owned, by name) shows every
// outstanding create and delete, dropping those it shows.
func (e *expectations) satisfied(key string, owned map[string]*v1alpha1.Machine) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	now := time.Now()
	for name, at := range p.creates {
		if _, seen := owned[name]; seen || now.Sub(at) > expectationTTL {
			delete(p.creates, name)
		}
	}
	for name, at := range p.deletes {
		m, exists := owned[name]
		if !exists || !m.DeletionTimestamp.IsZero() || now.Sub(at) > expectationTTL {
			delete(p.deletes, name)
		}
	}
	return len(p.creates) == 0 && len(p.deletes) == 0
}

func (e *expectations) drop(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.set, key)
}
