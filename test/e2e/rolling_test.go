package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestRollingUpdate proves a rolling update of 10 Machines to another
// MachineClass under a real workload: 20 pods spread over the Nodes, a
// PodDisruptionBudget keeping 15. At every observed state the fleet stays
// within maxSurge (2: at most 12 Machine objects, deleting ones included,
// replacementPolicy TerminationComplete) and maxUnavailable (1: at least 9
// Machines Ready and not being deleted), and at least 15 pods are
// available; each old Node is drained before it is deleted; the workload
// ends fully available on the new Nodes.
func TestRollingUpdate(t *testing.T) {
	rollingUpdate(t, "rolling", v1alpha1.TerminationComplete)
}

// TestRollingUpdateTerminationStarted is TestRollingUpdate with
// replacementPolicy TerminationStarted: a Machine being deleted no longer
// counts against maxSurge, so at every observed state at most 12 Machines
// not being deleted exist (more objects while old ones drain).
func TestRollingUpdateTerminationStarted(t *testing.T) {
	rollingUpdate(t, "rolling-started", v1alpha1.TerminationStarted)
}

func rollingUpdate(t *testing.T, name string, policy v1alpha1.ReplacementPolicy) {
	const replicas, surge, unavailable = 10, 2, 1
	s := newScenario(t, name)
	s.startManager()
	s.createClass("small", simSpec)
	s.createClass("large", largeSpec)
	s.createDeployment(replicas, "small", surge, unavailable)
	s.updateDeployment(func(md *v1alpha1.MachineDeployment) {
		md.Spec.Strategy.RollingUpdate.ReplacementPolicy = policy
	})
	s.waitFleet(replicas, "small", 3*time.Minute)
	rec := s.record()
	s.createWorkload(20, 15)
	rec.addCheck(budgetKept(15))
	largest := &fleetSize{}
	rec.addCheck(withinPolicyBounds(replicas, surge, unavailable, policy, largest))

	s.rollTo("large")
	after := s.waitFleet(replicas, "large", 6*time.Minute)
	pods := s.waitWorkload(20, 2*time.Minute)
	rec.mu.Lock() // the recorder's checks, which update largest, run under it
	seen := *largest
	rec.mu.Unlock()
	t.Logf("%s: largest fleet seen %d Machine objects, %d not being deleted (replicas %d, maxSurge %d)",
		policy, seen.objects, seen.live, replicas, surge)

	newNodes := map[string]bool{}
	for _, m := range after {
		newNodes[nodeOf(&m)] = true
	}
	for _, p := range pods {
		if !newNodes[p.Spec.NodeName] {
			t.Errorf("pod %s runs on %q, not on a Node of the new fleet", p.Name, p.Spec.NodeName)
		}
	}
	rec.verify()
	s.checkNoDuplicateVMs()
}

// withinRollingBounds is the invariant of a rolling update with the
// default replacementPolicy, TerminationComplete: at most
// replicas+maxSurge Machines exist, at least replicas-maxUnavailable are
// available (see withinPolicyBounds).
func withinRollingBounds(replicas, maxSurge, maxUnavailable int) check {
	return withinPolicyBounds(replicas, maxSurge, maxUnavailable, v1alpha1.TerminationComplete, &fleetSize{})
}

// fleetSize is the largest fleet a check saw.
type fleetSize struct{ objects, live int }

// withinPolicyBounds is the invariant of a rolling update: at most
// replicas+maxSurge Machines exist (with TerminationStarted: Machines not
// being deleted), at least replicas-maxUnavailable are available. A
// Failed Machine is not counted: its MachineSet replaces it outside the
// rollout's budget. largest records the largest fleet seen.
func withinPolicyBounds(replicas, maxSurge, maxUnavailable int, policy v1alpha1.ReplacementPolicy, largest *fleetSize) check {
	return func(r *recorder) string {
		var objects, live, ready int
		for _, m := range r.machinesLocked() {
			if m.Status.FailureReason != "" {
				continue
			}
			objects++
			if m.DeletionTimestamp == nil {
				live++
			}
			if machineAvailable(m) {
				ready++
			}
		}
		largest.objects, largest.live = max(largest.objects, objects), max(largest.live, live)
		switch {
		case policy == v1alpha1.TerminationStarted && live > replicas+maxSurge:
			return fmt.Sprintf("%d Machines not being deleted, more than %d+%d", live, replicas, maxSurge)
		case policy != v1alpha1.TerminationStarted && objects > replicas+maxSurge:
			return fmt.Sprintf("%d Machines exist, more than %d+%d", objects, replicas, maxSurge)
		case ready < replicas-maxUnavailable:
			return fmt.Sprintf("only %d Machines available, fewer than %d-%d", ready, replicas, maxUnavailable)
		}
		return ""
	}
}
