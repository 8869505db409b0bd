package plan

import "fmt"

// BatchOf is the smallest rolling-update step worth a write while other
// Machines are on their way: a fifth of a wave (maxSurge +
// maxUnavailable), at least 1. Machines become available one by one; a
// write per Machine cost each replaced Machine about 1.4 MachineSet
// patches and a deployment Event (docs/benchmarks-history.md, "Rollouts in
// waves").
func BatchOf(surge, unavailable int32) int32 {
	return max(1, (surge+unavailable)/5)
}

// hold keeps a rolling step smaller than in.Batch back, unchanged, while
// enough Machines are on their way to make it a batch — new ones not yet
// available, whose availability lets old sets shrink, and ones being
// deleted, whose end lets the new set grow — since their events wake the
// next reconcile with a larger step; and at most once (in.HoldExpired:
// the controller holds a step for a short coalescing delay, see the
// machinedeployment package). A step that the Machines on their way
// cannot make a batch is written at once: waiting would only slow it.
func hold(in Input, targets []Target) bool {
	if in.Batch <= 1 || in.HoldExpired {
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
	if moved == 0 || moved >= in.Batch || moved+in.onTheirWay() < in.Batch {
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

// onTheirWay counts the Machines whose next event changes the plan: the
// new set's not yet available, and those being deleted.
func (in Input) onTheirWay() int32 {
	var n int32
	if in.New != nil {
		n += max(0, in.New.live()-in.New.Available) + in.New.Terminating
	}
	for _, s := range in.Old {
		n += s.Terminating
	}
	return n
}
