package safety

import (
	"math/rand/v2"
	"time"
)

// backoff is the wait before retry number failures (1 for the first):
// base·2^(failures−1), capped, minus up to 20% jitter so that many classes
// failing together do not retry in lockstep.
func backoff(failures int, base, limit time.Duration) time.Duration {
	d := base
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	if d <= 0 {
		return 0
	}
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}
