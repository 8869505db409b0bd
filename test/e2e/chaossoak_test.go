package e2e

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The chaos run's leak check (docs/reliability.md, "Memory and
// goroutines"). The faults kill every manager process within seconds, so
// no process lives through the run long enough to leak: after the run
// converged, one leading process goes through rounds of the faults that
// leave it running (the driver killed, a VM stopped behind its back, a
// scale-up and a scale-down) and its goroutines and live heap must come
// back to their level at the same fleet.
//
// The bounds: a leader at rest after the same rounds holds the same
// goroutines give or take a few (285 and 283 in a run here); one goroutine
// leaked per MachineSet reconcile added 84 in 2 rounds.
const (
	soakGoroutineSlack = 1.05 // × the level after the first round, plus soakGoroutineSpare
	soakGoroutineSpare = 10
	soakHeapSlack      = 2.0 // × the level after the first round
)

// processLevel is what one manager process holds at a moment.
type processLevel struct {
	goroutines float64
	heapBytes  float64 // the least heap in use of a few samples: close to the live heap
}

func (l processLevel) String() string {
	return fmt.Sprintf("%.0f goroutines, %.1f MiB heap", l.goroutines, l.heapBytes/(1<<20))
}

// leader is the manager that leads (controller-runtime's
// leader_election_master_status), or nil.
func (r *chaosRun) leader() *manager {
	for _, m := range r.managers {
		if v, err := metricValue(m, "leader_election_master_status"); err == nil && v == 1 {
			return m
		}
	}
	return nil
}

// level samples m's goroutines and heap 5 times, a second apart, and
// keeps the least of each: a garbage collection in between brings the
// heap in use down to about what is live.
func level(m *manager) (processLevel, error) {
	l := processLevel{goroutines: -1, heapBytes: -1}
	for i := 0; i < 5; i++ {
		if i > 0 {
			time.Sleep(time.Second)
		}
		g, err := metricValue(m, "go_goroutines")
		if err != nil {
			return l, err
		}
		h, err := metricValue(m, "go_memstats_heap_inuse_bytes")
		if err != nil {
			return l, err
		}
		if l.goroutines < 0 || g < l.goroutines {
			l.goroutines = g
		}
		if l.heapBytes < 0 || h < l.heapBytes {
			l.heapBytes = h
		}
	}
	return l, nil
}

// soak runs rounds of the faults a process survives against the leading
// manager, and returns its level after the first round and after the
// last, both at r.replicas converged Machines of r.class. It fails the
// test when the leader changed (the check then measured nothing) or the
// level did not come back.
func (r *chaosRun) soak(rounds int, bound time.Duration) {
	s := r.s
	t := s.t
	t.Helper()
	// A manager started again by the last fault may be acquiring the lease.
	var m *manager
	if err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(context.Context) (bool, error) {
		m = r.leader()
		return m != nil, nil
	}); err != nil {
		t.Errorf("leak check: no manager leads a minute after the run")
		return
	}
	pid := cluster.PIDs()[m.name]
	var first, last processLevel
	for round := 1; round <= rounds; round++ {
		r.note("leak check round %d of %d on the leader %s: the driver killed, an idle VM stopped, scale to %d and back", round, rounds, m.name, r.replicas+2)
		if err := s.crashAndRestartDriver(); err != nil {
			t.Fatalf("leak check: %v", err)
		}
		if id, machine := r.idleVM(); id != "" {
			r.note("stop VM %s of Machine %s", id, machine)
			if err := r.stopVM(id); err != nil {
				r.note("stopping VM %s: %v", id, err)
			}
		}
		s.scale(r.replicas + 2)
		if err := s.converges(int(r.replicas)+2, r.class, bound); err != nil {
			t.Errorf("leak check round %d: no convergence at %d: %v", round, r.replicas+2, err)
			return
		}
		s.scale(r.replicas)
		if err := s.converges(int(r.replicas), r.class, bound); err != nil {
			t.Errorf("leak check round %d: no convergence at %d: %v", round, r.replicas, err)
			return
		}
		l, err := level(m)
		if err != nil {
			t.Errorf("leak check round %d: reading %s's metrics: %v", round, m.name, err)
			return
		}
		if round == 1 {
			first = l
		}
		last = l
	}
	if now := cluster.PIDs()[m.name]; now != pid {
		t.Errorf("leak check: the leader %s was restarted during the check (pid %d, then %d): nothing measured", m.name, pid, now)
		return
	}
	t.Logf("leak check: the leader %s after round 1: %s; after round %d: %s", m.name, first, rounds, last)
	if last.goroutines > first.goroutines*soakGoroutineSlack+soakGoroutineSpare {
		t.Errorf("leak check: %s's goroutines grew from %.0f to %.0f over %d rounds of faults at the same fleet", m.name, first.goroutines, last.goroutines, rounds-1)
	}
	if last.heapBytes > first.heapBytes*soakHeapSlack {
		t.Errorf("leak check: %s's heap grew from %.1f to %.1f MiB over %d rounds of faults at the same fleet", m.name, first.heapBytes/(1<<20), last.heapBytes/(1<<20), rounds-1)
	}
}
