package simmachine

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// backoff counts the consecutive retryable failures of each SimMachine and
// turns them into an exponential delay with jitter. The count lives in
// memory: after a restart retries start fast again, which is harmless
// because every call the controller makes is idempotent.
type backoff struct {
	mu    sync.Mutex
	fails map[types.UID]int
}

func newBackoff() *backoff { return &backoff{fails: map[types.UID]int{}} }

// next returns the delay before the next try: base doubled per earlier
// failure, capped, then drawn from [d/2, d) so that many SimMachines
// failing together (an outage) do not retry in lockstep.
func (b *backoff) next(uid types.UID, base, maxDelay time.Duration) time.Duration {
	b.mu.Lock()
	n := b.fails[uid]
	b.fails[uid] = n + 1
	b.mu.Unlock()
	d := base
	for range n {
		if d >= maxDelay/2 {
			d = maxDelay
			break
		}
		d *= 2
	}
	d = min(d, maxDelay)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half) //nolint:gosec // jitter, not security
}

// reset forgets the failures of a SimMachine that made progress or is gone.
func (b *backoff) reset(uid types.UID) {
	b.mu.Lock()
	delete(b.fails, uid)
	b.mu.Unlock()
}
