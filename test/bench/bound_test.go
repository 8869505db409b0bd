package main

import (
	"strings"
	"testing"
)

func TestMaxSurgeRoundsUp(t *testing.T) {
	for replicas, want := range map[int]int{0: 0, 1: 1, 10: 1, 11: 2, 1000: 100, 5000: 500} {
		if got := maxSurge(replicas); got != want {
			t.Errorf("maxSurge(%d) = %d, want %d", replicas, got, want)
		}
	}
}

func TestFleetBoundCheck(t *testing.T) {
	b := func(policy string) fleetBound { return boundFor(10, 10, policy) } // limit 11
	for _, tc := range []struct {
		name   string
		bound  fleetBound
		count  fleetCount
		wantOK bool
	}{
		{"complete at the limit", b(policyComplete), fleetCount{All: 11, NotDeleting: 11}, true},
		{"complete one over", b(policyComplete), fleetCount{All: 12, NotDeleting: 11}, false},
		{"complete counts deleting Machines", b(policyComplete), fleetCount{All: 12, NotDeleting: 1}, false},
		{"default policy is complete", b(""), fleetCount{All: 12, NotDeleting: 10}, false},
		{"started ignores deleting Machines", b(policyStarted), fleetCount{All: 15, NotDeleting: 11}, true},
		{"started one over", b(policyStarted), fleetCount{All: 12, NotDeleting: 12}, false},
		{"scale-down keeps the old count", boundFor(10, 0, policyComplete), fleetCount{All: 11, NotDeleting: 0}, true},
		{"scale-up surge is of the target", boundFor(0, 10, policyComplete), fleetCount{All: 12, NotDeleting: 12}, false},
	} {
		err := tc.bound.check(tc.count)
		if (err == nil) != tc.wantOK {
			t.Errorf("%s: check(%+v) under %+v = %v, want ok=%v", tc.name, tc.count, tc.bound, err, tc.wantOK)
		}
	}
}

func TestFleetWatchCountsEveryEvent(t *testing.T) {
	var loud []error
	w := newFleetWatch(func(err error) { loud = append(loud, err) })
	w.reset(boundFor(2, 2, policyStarted)) // limit 3
	w.observe("a", true, false)
	w.observe("b", true, false)
	w.observe("c", true, false)
	w.observe("a", true, true)  // a starts deleting: 2 not deleting
	w.observe("a", true, true)  // a repeated update must not count twice
	w.observe("d", true, false) // 3 not deleting, 4 objects: allowed under TerminationStarted
	if _, _, err := w.result(); err != nil || len(loud) != 0 {
		t.Fatalf("violation within the bound: %v %v", err, loud)
	}
	w.observe("e", true, false) // 4 not deleting: over
	w.observe("a", false, false)
	w.observe("zz", false, false) // a delete of an unknown Machine changes nothing
	bound, peak, err := w.result()
	if err == nil || len(loud) != 1 || !strings.Contains(err.Error(), "4 Machines not being deleted > replicas 2 + maxSurge 1") {
		t.Fatalf("result() = %v, logged %v; want one violation naming 4 Machines not being deleted", err, loud)
	}
	if peak != (fleetCount{All: 5, NotDeleting: 4}) || bound.limit() != 3 {
		t.Errorf("peak %+v, bound %+v; want 5 objects, 4 not deleting, limit 3", peak, bound)
	}
	if err := w.reset(boundFor(2, 2, policyComplete)); err != nil {
		t.Errorf("reset returned the violation result() already reported: %v", err)
	}
	if _, peak, err := w.result(); err != nil || peak != (fleetCount{All: 4, NotDeleting: 4}) {
		t.Errorf("after reset: peak %+v, err %v; want the fleet as it is (4, 4) and no violation", peak, err)
	}
	// A violation between two scenarios (no result() in between) is
	// returned by the next reset, not lost.
	w.reset(boundFor(10, 10, policyComplete))
	w.observe("f", true, false) // 5 Machines, limit 11: fine
	w.bound = boundFor(2, 2, policyComplete)
	w.observe("g", true, false) // 6 Machines, limit 3
	if err := w.reset(boundFor(10, 10, policyComplete)); err == nil || !strings.Contains(err.Error(), "6 Machine objects") {
		t.Errorf("reset after an unreported violation = %v, want it", err)
	}
}
