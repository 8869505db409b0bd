package plan

import "fmt"

// BatchOf is the smallest rolling-update step worth a write while other
// Machines are on their way: a fifth of a wave (maxSurge +
// maxUnavailable), at least 1. Machines become available one by one; a
// write per Machine cost each replaced Machine about 1.4 MachineSet
// patches and a deployment Event (docs/benchmarks.md, "Rollouts in
// waves").
func BatchOf(surge, unavailable int32) int32 {
	return max(1, (surge+unavailable)/5)
}

// hold keeps a rolling step smaller than in.Batch back, unchanged, while a
// Machine is on its way — a new one not yet available, or one being
// deleted — whose event will wake the next reconcile with a larger step;
// and at most once (in.HoldExpired: the controller holds a step for a
// short coalescing delay, see the machinedeployment package). A step
// with nothing in flight is written at once: no event would come.
func hold(in Input, targets []Target) bool {
	if in.Batch <= 1 || in.HoldExpired || !in.inFlight() {
		return false
	}
	var shrink, grow int32
	for _, t := range targets {
		if t.Create || t.Annotate {
			return false // a new set, or one not yet sized for these replicas
		}
		if d := t.To - t.From; d > 0 {
			grow += d
		} else {
			shrink -= d
		}
	}
	moved := max(shrink, grow)
	if moved == 0 || moved >= in.Batch {
		return false
	}
	for i := range targets {
		t := &targets[i]
		if t.To != t.From {
			t.Why += fmt.Sprintf("; held at %d: a step of %d, below the batch of %d", t.From, moved, in.Batch)
			t.To = t.From
		}
	}
	return true
}

// inFlight reports whether a Machine is on its way: one of the new set
// not available yet, or one being deleted.
func (in Input) inFlight() bool {
	if n := in.New; n != nil && (n.live() > n.Available || n.Terminating > 0) {
		return true
	}
	for _, s := range in.Old {
		if s.Terminating > 0 {
			return true
		}
	}
	return false
}
