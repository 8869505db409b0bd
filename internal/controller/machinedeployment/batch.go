package machinedeployment

import (
	"sync"
	"time"
)

// holdDelay is how long a rolling step smaller than the batch (see
// plan.BatchOf) may wait for more Machines to become available or go
// before it is written anyway: short beside a Machine's create → Ready
// (seconds), long beside the gap between Machine events in a wave that
// moves many at once. A replacement can wait twice (once for its old
// Machine to go, once for its new one to start), so twice this bounds
// what batching adds to it.
const holdDelay = 500 * time.Millisecond

// holds remembers, per deployment, since when a step has been held.
type holds struct {
	mu    sync.Mutex
	since map[string]time.Time
}

// expired reports whether key has a step held for holdDelay already.
func (h *holds) expired(key string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	since, ok := h.since[key]
	return ok && now.Sub(since) >= holdDelay
}

// held records that key holds a step, and says when to come back.
func (h *holds) held(key string, now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.since == nil {
		h.since = map[string]time.Time{}
	}
	since, ok := h.since[key]
	if !ok {
		since, h.since[key] = now, now
	}
	return max(since.Add(holdDelay).Sub(now), time.Millisecond)
}

// drop forgets key's held step: it was written, or the deployment is gone.
func (h *holds) drop(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, key)
}
