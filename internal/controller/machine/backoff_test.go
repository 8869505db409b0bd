package machine

import (
	"testing"
	"time"
)

func TestBackoffGrowsAndIsBounded(t *testing.T) {
	base, limit := time.Second, 30*time.Second
	prev := time.Duration(0)
	for failures := int32(1); failures <= 10; failures++ {
		d := backoff(failures, base, limit)
		full := min(base<<(failures-1), limit)
		if d > full || d < full-full/5 {
			t.Fatalf("backoff(%d) = %s; want within [%s, %s]", failures, d, full-full/5, full)
		}
		if full < limit && d < prev/2 {
			t.Fatalf("backoff shrank from %s to %s", prev, d)
		}
		prev = d
	}
}
