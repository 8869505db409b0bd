package changed_test

import (
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/controller/changed"
)

func TestFullPassDueAndIn(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		now  time.Time
		due  bool
		next time.Duration
	}{
		{at, false, changed.FullPassEvery},
		{at.Add(time.Minute), false, changed.FullPassEvery - time.Minute},
		{at.Add(changed.FullPassEvery - time.Nanosecond), false, time.Millisecond},
		{at.Add(changed.FullPassEvery), true, time.Millisecond},
		{at.Add(time.Hour), true, time.Millisecond},
		{at.Add(-time.Second), true, changed.FullPassEvery + time.Second}, // the clock went back
	} {
		if got := changed.FullPassDue(at, c.now); got != c.due {
			t.Errorf("at %s after the pass: due %v, want %v", c.now.Sub(at), got, c.due)
		}
		if got := changed.FullPassIn(at, c.now); got != c.next {
			t.Errorf("at %s after the pass: next in %s, want %s", c.now.Sub(at), got, c.next)
		}
	}
}
