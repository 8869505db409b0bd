package machineset

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
)

// The MachineDeployment's planner and the MachineSet's victim order are
// one model: whatever an old set's Machines are (available or not,
// marked by the cluster-autoscaler, with delete priorities), the Machines
// the set deletes for the plan's target never take the deployment's
// available Machines below replicas − maxUnavailable (or further below,
// when already there). Pure: the planner and the order, on random fleets.
func TestVictimsKeepThePlansFloor(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 2 + rng.IntN(7)
		old := make([]*v1alpha1.Machine, n)
		for i := range old {
			old[i] = randomMachine(rng, fmt.Sprintf("old-%d", i), now)
		}
		newAvailable := rng.IntN(n + 1)
		var fresh []*v1alpha1.Machine
		for i := range newAvailable {
			fresh = append(fresh, mach(fmt.Sprintf("new-%d", i), v1alpha1.PhaseRunning, time.Hour, nil, true))
		}
		replicas, surge, unavailable := int32(n), int32(rng.IntN(3)), int32(rng.IntN(3))
		oldCounts, _ := plan.Count(old, 0, now, time.Time{})
		newCounts, _ := plan.Count(fresh, 0, now, time.Time{})
		r := plan.Plan(plan.Input{
			Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable,
			New: &plan.Set{Name: "new", Spec: int32(newAvailable), Counts: newCounts},
			Old: []plan.Set{{Name: "old", Spec: int32(n), Counts: oldCounts}},
		})
		to := r.Targets[0].To
		gone := victims(old, n-int(to), v1alpha1.DeletePolicyRandom, 0, now, nil)
		deleted := map[string]bool{}
		for _, m := range gone {
			deleted[m.Name] = true
		}
		before, after := newAvailable, newAvailable
		for _, m := range old {
			if available(m, now) {
				before++
				if !deleted[m.Name] {
					after++
				}
			}
		}
		if floor := min(int(replicas-unavailable), before); after < floor {
			t.Fatalf("seed %d: old set [%s] planned %d → %d (%s); the set deletes %v: available %d → %d, under the floor %d (replicas %d − maxUnavailable %d)",
				seed, describe(old, now), n, to, r.Targets[0].Why, namesOf(gone), before, after, floor, replicas, unavailable)
		}
	}
}

// randomMachine is available or not in one of several ways, and is
// sometimes marked for deletion or given a delete priority.
func randomMachine(rng *rand.Rand, name string, now time.Time) *v1alpha1.Machine {
	var ann map[string]string
	switch rng.IntN(6) {
	case 0:
		ann = map[string]string{v1alpha1.DeleteMachineAnnotation: "yes"}
	case 1:
		ann = map[string]string{v1alpha1.PriorityAnnotation: fmt.Sprint(1 + rng.IntN(5))}
	}
	switch rng.IntN(6) {
	case 0:
		return mach(name, v1alpha1.PhaseUnknown, time.Hour, ann, true)
	case 1:
		return mach(name, v1alpha1.PhaseProvisioning, time.Minute, ann, false)
	case 2:
		m := mach(name, v1alpha1.PhaseRunning, time.Hour, ann, true)
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{
			Type: v1alpha1.OwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: "WaitingForRemediation"})
		return m
	default:
		m := mach(name, v1alpha1.PhaseRunning, time.Hour, ann, true)
		m.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Hour))
		return m
	}
}

// available is what the test counts as available: Ready, and not marked
// for replacement by a health check.
func available(m *v1alpha1.Machine, now time.Time) bool {
	for _, c := range m.Status.Conditions {
		if c.Type == v1alpha1.OwnerRemediatedCondition && c.Status == metav1.ConditionFalse {
			return false
		}
	}
	for _, c := range m.Status.Conditions {
		if c.Type == v1alpha1.ReadyCondition {
			return c.Status == metav1.ConditionTrue && !c.LastTransitionTime.After(now)
		}
	}
	return false
}

func describe(ms []*v1alpha1.Machine, now time.Time) string {
	var parts []string
	for _, m := range ms {
		s := m.Name + ":"
		if available(m, now) {
			s += "available"
		} else {
			s += "unavailable"
		}
		for k, v := range m.Annotations {
			s += fmt.Sprintf(",%s=%s", k[strings.LastIndex(k, "/")+1:], v)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}
