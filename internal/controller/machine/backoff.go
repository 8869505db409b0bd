package machine

import (
	"math/rand/v2"
	"time"
)

// backoff returns the wait before retry number failures (1 for the first
// retry): base·2^(failures−1), capped, with up to 20% jitter so that many
// Machines failing together do not retry in lockstep.
func backoff(failures int32, base, limit time.Duration) time.Duration {
	if failures < 1 {
		failures = 1
	}
	d := base
	for i := int32(1); i < failures && d < limit; i++ {
		d *= 2
	}
	if d > limit {
		d = limit
	}
	jitter := time.Duration(rand.Int64N(int64(d)/5 + 1))
	return d - jitter
}
