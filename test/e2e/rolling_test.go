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
// within maxSurge (2: at most 12 Machine objects, deleting ones included)
// and maxUnavailable (1: at least 9 Machines Ready and not being deleted),
// and at least 15 pods are available; each old Node is drained before it
// is deleted; the workload ends fully available on the new Nodes.
func TestRollingUpdate(t *testing.T) {
	const replicas, surge, unavailable = 10, 2, 1
	s := newScenario(t, "rolling")
	s.startManager()
	s.createClass("small", simSpec)
	s.createClass("large", largeSpec)
	s.createDeployment(replicas, "small", surge, unavailable)
	s.waitFleet(replicas, "small", 3*time.Minute)
	rec := s.record()
	s.createWorkload(20, 15)
	rec.addCheck(budgetKept(15))
	rec.addCheck(withinRollingBounds(replicas, surge, unavailable))

	s.rollTo("large")
	after := s.waitFleet(replicas, "large", 6*time.Minute)
	pods := s.waitWorkload(20, 2*time.Minute)

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

// withinRollingBounds is the invariant of a rolling update: at most
// replicas+maxSurge Machines exist, at least replicas-maxUnavailable are
// available. A Failed Machine is not counted: its MachineSet replaces it
// outside the rollout's budget.
func withinRollingBounds(replicas, maxSurge, maxUnavailable int) check {
	return func(r *recorder) string {
		var ms []*v1alpha1.Machine
		ready := 0
		for _, m := range r.machinesLocked() {
			if m.Status.FailureReason != "" {
				continue
			}
			ms = append(ms, m)
			if machineReady(m) {
				ready++
			}
		}
		switch {
		case len(ms) > replicas+maxSurge:
			return fmt.Sprintf("%d Machines exist, more than %d+%d", len(ms), replicas, maxSurge)
		case ready < replicas-maxUnavailable:
			return fmt.Sprintf("only %d Machines available, fewer than %d-%d", ready, replicas, maxUnavailable)
		}
		return ""
	}
}
