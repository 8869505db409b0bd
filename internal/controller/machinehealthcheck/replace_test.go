package machinehealthcheck_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// TestTwoConditionsReplaceTheSelectedMachinesEachAfterItsTimeout: a health
// check with Ready=False after 2s and a GPU condition after 6s replaces
// exactly the Machines it selects, each no sooner than its own timeout,
// and leaves alone a Machine it does not select although its Node is just
// as NotReady.
func TestTwoConditionsReplaceTheSelectedMachinesEachAfterItsTimeout(t *testing.T) {
	h := newHarness(t)
	h.Class("small", `{"region":"local","zones":["local-a"]}`)
	set(h, "web", 3)
	setWithTimeout(h, "db", 1, time.Hour)
	const readyTimeout, gpuTimeout = 2 * time.Second, 6 * time.Second
	healthCheck(h, "web", v1alpha1.MachineHealthCheckSpec{
		Selector: selecting("web"),
		Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
			nodeCondition("Ready", "False", readyTimeout),
			nodeCondition("example.com/GPUFailed", "True", gpuTimeout),
		}},
	})
	// Nobody judges db but its own spec.lifecycle, an hour's health timeout.
	web := waitRunning(h, "web", 3)
	db := waitRunning(h, "db", 1)[0]

	notReady, gpu, healthy := web[0], web[1], web[2]
	start := time.Now()
	setNodeReady(h, notReady, false)
	setNodeCondition(h, gpu, "example.com/GPUFailed", corev1.ConditionTrue)
	setNodeReady(h, db, false)

	seen := map[string]time.Duration{}
	h.Eventually(60*time.Second, "both unhealthy web Machines to be replaced", func() (bool, error) {
		for _, m := range []v1alpha1.Machine{notReady, gpu} {
			if _, ok := seen[m.Name]; !ok && replaced(h, m.Name) {
				seen[m.Name] = time.Since(start)
			}
		}
		if replaced(h, healthy.Name) {
			return false, fmt.Errorf("healthy Machine %s was replaced", healthy.Name)
		}
		return len(seen) == 2, nil
	})
	// Condition times have whole seconds: a timeout may end up to a second early.
	for name, timeout := range map[string]time.Duration{notReady.Name: readyTimeout, gpu.Name: gpuTimeout} {
		t.Logf("%s replaced %s after its fault (timeout %s)", name, seen[name].Round(100*time.Millisecond), timeout)
		if seen[name] < timeout-time.Second {
			t.Errorf("%s was replaced %s after its fault, before its timeout of %s", name, seen[name], timeout)
		}
	}
	h.ExpectEvent(machine.FailureHealthCheck, notReady.Name, gpu.Name)

	// The set is whole again, with new Machines for the two replaced.
	now := waitRunning(h, "web", 3)
	for _, m := range now {
		if m.Name == notReady.Name || m.Name == gpu.Name {
			t.Errorf("replaced Machine %s is still in the set", m.Name)
		}
	}
	// db is not selected: NotReady all along, not judged by the health check.
	m := getMachine(h, db.Name)
	if m == nil || m.Status.FailureReason != "" || !m.DeletionTimestamp.IsZero() {
		t.Fatalf("Machine %s, which no health check selects, was replaced", db.Name)
	}
	if c := conditionOf(m.Status.Conditions, v1alpha1.HealthCheckSucceededCondition); c != nil {
		t.Errorf("Machine %s, which no health check selects, has %+v", db.Name, c)
	}
	mhc := getHealthCheck(h, "web")
	if mhc.Status.ExpectedMachines != 3 {
		t.Errorf("expectedMachines = %d, want 3", mhc.Status.ExpectedMachines)
	}
}
