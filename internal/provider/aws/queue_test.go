package aws

import (
	"context"
	"testing"
	"time"
)

// TestWaitOf checks the long poll of a call: at most SQS's 20 s, whole
// seconds rounded down, ending a second before the call's deadline.
func TestWaitOf(t *testing.T) {
	bg := context.Background()
	for _, c := range []struct {
		want, got time.Duration
	}{{0, 0}, {-time.Second, 0}, {1500 * time.Millisecond, time.Second}, {20 * time.Second, 20 * time.Second}, {time.Minute, 20 * time.Second}} {
		if w := waitOf(bg, c.want); w != c.got {
			t.Errorf("waitOf(%s) = %s, want %s", c.want, w, c.got)
		}
	}
	ctx, cancel := context.WithTimeout(bg, 5500*time.Millisecond)
	defer cancel()
	if w := waitOf(ctx, 20*time.Second); w != 4*time.Second {
		t.Errorf("waitOf with 5.5 s left = %s, want 4s", w)
	}
}

// TestEventIDs checks that an event's ID gives back its receipt handle and
// instance, and that IDs the driver did not make are told apart.
func TestEventIDs(t *testing.T) {
	h, i, ok := parseEventID(eventID("AQEB+x/y==", "i-0123456789abcdef0"))
	if !ok || h != "AQEB+x/y==" || i != "i-0123456789abcdef0" {
		t.Errorf("parseEventID(eventID) = %q, %q, %v", h, i, ok)
	}
	for _, id := range []string{"", "no-separator", "|i-0123", "handle|"} {
		if _, _, ok := parseEventID(id); ok {
			t.Errorf("parseEventID(%q) accepted", id)
		}
	}
}
