package machineset

import (
	"sync"
	"time"
)

// Replacing Machines that failed before ever running backs off: a class or
// template that cannot make a working Machine (a bad image, a refused
// providerSpec) must cost a few Machines, not a new one every second.
const (
	replaceBackoffBase = 10 * time.Second
	replaceBackoffCap  = 5 * time.Minute
)

// replaceBackoff remembers, per MachineSet, how many Machines in a row
// failed before running. Memory only: a restart forgets it, which costs
// one more Machine at most.
type replaceBackoff struct {
	mu sync.Mutex
	m  map[string]earlyFailures
}

type earlyFailures struct {
	count  int
	last   time.Time
	joined int // Machines that had run when the last one failed
}

// failed records that n Machines of set key failed before running, when
// joined of its Machines had run.
func (b *replaceBackoff) failed(key string, n, joined int, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]earlyFailures{}
	}
	e := b.m[key]
	b.m[key] = earlyFailures{count: e.count + n, last: now, joined: joined}
}

// wait is how long set key must wait before creating a replacement: none
// after the first early failure, then 10s, 20s, … up to 5 min. A Machine
// that ran since the last early failure ends the backoff.
func (b *replaceBackoff) wait(key string, joined int, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[key]
	if !ok {
		return 0
	}
	if joined > e.joined {
		delete(b.m, key)
		return 0
	}
	if e.count < 2 {
		return 0 // one failure may be bad luck: replace it at once
	}
	d := replaceBackoffBase
	for i := 2; i < e.count && d < replaceBackoffCap; i++ {
		d *= 2
	}
	return max(0, e.last.Add(min(d, replaceBackoffCap)).Sub(now))
}

func (b *replaceBackoff) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}
