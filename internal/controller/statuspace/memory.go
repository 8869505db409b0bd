// Package statuspace remembers when a controller last wrote each object's
// status, so that a status whose only change is counts no controller
// decides from waits an interval instead of costing a write per Machine
// event (docs/benchmarks.md). What may wait is each controller's own
// judgment; this package keeps only the times.
package statuspace

import (
	"sync"
	"time"
)

// Memory holds, per object key, when its status was last written. Kept
// in memory only: a restarted manager writes at once. The zero value is
// ready to use; it is safe for concurrent workers.
type Memory[K comparable] struct {
	mu   sync.Mutex
	last map[K]time.Time
}

// Left is how long until interval has passed since key's last status
// write: 0 when it has, or when key was never written.
func (m *Memory[K]) Left(key K, interval time.Duration, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.last[key]
	if !ok {
		return 0
	}
	return max(last.Add(interval).Sub(now), 0)
}

// Wrote records a status write of key at now.
func (m *Memory[K]) Wrote(key K, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[K]time.Time{}
	}
	m.last[key] = now
}

// Forget drops key (its object is gone).
func (m *Memory[K]) Forget(key K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, key)
}
