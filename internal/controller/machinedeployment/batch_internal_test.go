package machinedeployment

import (
	"testing"
	"time"
)

// A held step comes back when its delay ends, and is written then however
// small; a write, or the deployment's deletion, ends the hold.
func TestHolds(t *testing.T) {
	var h holds
	t0 := time.Unix(1000, 0)
	if h.expired("a", t0) {
		t.Fatal("expired before anything was held")
	}
	if wait := h.held("a", t0); wait != holdDelay {
		t.Errorf("first hold: come back after %s, want %s", wait, holdDelay)
	}
	later := t0.Add(holdDelay / 2)
	if wait := h.held("a", later); wait != holdDelay/2 {
		t.Errorf("held again: come back after %s, want the rest of the first delay, %s", wait, holdDelay/2)
	}
	if h.expired("a", later) {
		t.Error("expired within the delay")
	}
	if !h.expired("a", t0.Add(holdDelay)) {
		t.Error("not expired at the end of the delay: a small step could be held forever")
	}
	h.drop("a")
	if h.expired("a", t0.Add(time.Hour)) {
		t.Error("expired after the step was written")
	}
}
