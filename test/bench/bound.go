package main

import (
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The replacement policies of spec.strategy.rollingUpdate.replacementPolicy:
// how a Machine being deleted counts against maxSurge.
const (
	// policyComplete: a Machine uses surge until its object is gone (its
	// VM deleted), so every Machine object counts.
	policyComplete = "TerminationComplete"
	// policyStarted: a Machine stops using surge once its deletion starts,
	// so only the Machines not being deleted count.
	policyStarted = "TerminationStarted"
)

// maxSurgePercent is the benchmark deployment's maxSurge.
const maxSurgePercent = 10

// maxSurge is maxSurgePercent of replicas, rounded up as Deployments do.
func maxSurge(replicas int) int {
	return int(math.Ceil(float64(replicas) * maxSurgePercent / 100))
}

// fleetCount is the fleet at one moment: every Machine object of the
// deployment's namespace, and those without a deletionTimestamp.
type fleetCount struct {
	All         int `json:"machines"`
	NotDeleting int `json:"not_deleting"`
}

// fleetBound is what the replacement policy allows: replicas + maxSurge
// Machines, counted as the policy says.
type fleetBound struct {
	Replicas int    `json:"replicas"`
	MaxSurge int    `json:"max_surge"`
	Policy   string `json:"replacement_policy"`
}

// boundFor is the bound while the deployment goes from replicas from to
// replicas to (equal when only the template changes): a scale-down may
// keep the old count until Machines are deleted, and maxSurge is taken of
// the larger count, so neither direction of a scaling is a violation.
func boundFor(from, to int, policy string) fleetBound {
	r := max(from, to)
	return fleetBound{Replicas: r, MaxSurge: maxSurge(r), Policy: policy}
}

// limit is the most Machines the policy allows.
func (b fleetBound) limit() int { return b.Replicas + b.MaxSurge }

// check returns an error naming the counts when c exceeds the bound:
// with TerminationStarted the Machines not being deleted, otherwise (the
// default, TerminationComplete) all Machine objects.
func (b fleetBound) check(c fleetCount) error {
	counted, what := c.All, "Machine objects"
	if b.Policy == policyStarted {
		counted, what = c.NotDeleting, "Machines not being deleted"
	}
	if counted > b.limit() {
		return fmt.Errorf("fleet bound violated: %d %s > replicas %d + maxSurge %d under %s (all Machines %d, not being deleted %d)",
			counted, what, b.Replicas, b.MaxSurge, b.policyName(), c.All, c.NotDeleting)
	}
	return nil
}

func (b fleetBound) policyName() string {
	if b.Policy == "" {
		return policyComplete
	}
	return b.Policy
}

// fleetWatch follows the fleet Machine by Machine from the observer's
// informer events and checks the bound at every event. It keeps the
// largest counts since the last reset and the first violation.
type fleetWatch struct {
	mu        sync.Mutex
	deleting  map[types.UID]bool // every Machine seen, whether it is being deleted
	nDeleting int
	bound     fleetBound
	peak      fleetCount
	violation error
	over      bool        // the last event left the fleet over the bound
	reported  bool        // result has returned the violation
	onViolate func(error) // called, outside the lock, when the fleet goes over the bound; for a loud log
}

func newFleetWatch(onViolate func(error)) *fleetWatch {
	return &fleetWatch{deleting: map[types.UID]bool{}, onViolate: onViolate}
}

// observe records an event: the Machine uid exists (and is being deleted
// or not), or is gone.
func (w *fleetWatch) observe(uid types.UID, exists, deleting bool) {
	w.mu.Lock()
	was, known := w.deleting[uid]
	switch {
	case exists:
		w.deleting[uid] = deleting
		if known && was {
			w.nDeleting--
		}
		if deleting {
			w.nDeleting++
		}
	case known:
		delete(w.deleting, uid)
		if was {
			w.nDeleting--
		}
	}
	c := w.countLocked()
	w.peak.All, w.peak.NotDeleting = max(w.peak.All, c.All), max(w.peak.NotDeleting, c.NotDeleting)
	err := w.bound.check(c)
	wasOver := w.over
	w.over = err != nil
	if err != nil {
		err = fmt.Errorf("%s: %w", time.Now().Format("15:04:05.000"), err)
		if w.violation == nil {
			w.violation = err
		}
	}
	w.mu.Unlock()
	if err != nil && !wasOver && w.onViolate != nil {
		w.onViolate(err)
	}
}

func (w *fleetWatch) countLocked() fleetCount {
	return fleetCount{All: len(w.deleting), NotDeleting: len(w.deleting) - w.nDeleting}
}

// reset starts a scenario: the bound in force from now on, the peak
// restarted from the fleet as it is, no violation yet. It returns the
// violation not yet reported, if any: one between two scenarios (e.g.
// while a wave's floor was measured) must not be lost.
func (w *fleetWatch) reset(b fleetBound) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var missed error
	if !w.reported {
		missed = w.violation
	}
	w.bound, w.peak, w.violation, w.over, w.reported = b, w.countLocked(), nil, false, false
	return missed
}

// result returns the bound, the largest fleet since reset and the first
// violation, if any; the next reset then does not return that violation
// again.
func (w *fleetWatch) result() (fleetBound, fleetCount, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reported = true
	return w.bound, w.peak, w.violation
}
