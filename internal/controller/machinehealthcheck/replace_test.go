package machinehealthcheck_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
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
	h.Eventually(30*time.Second, "the health check to expect the set's 3 Machines", func() (bool, error) {
		return getHealthCheck(h, "web").Status.ExpectedMachines == 3, nil
	})
}

// TestPreservedFailedMachineHoldsNoRemediationSlot: a Machine the health
// check remediated and preservation keeps (when-failed) is done with: it
// does not hold the one maxInFlight slot, so the next unhealthy Machine is
// remediated while the first is still kept.
func TestPreservedFailedMachineHoldsNoRemediationSlot(t *testing.T) {
	h := newHarness(t)
	h.Class("small", `{"region":"local","zones":["local-a"]}`)
	setWithTimeout(h, "web", 2, time.Hour)
	healthCheck(h, "web", v1alpha1.MachineHealthCheckSpec{
		Selector: selecting("web"),
		Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
			nodeCondition("Ready", "False", time.Second),
		}},
		Remediation: v1alpha1.MachineHealthCheckRemediation{MaxInFlight: ptr.To(intstr.FromInt32(1))},
	})
	web := waitRunning(h, "web", 2)
	kept, next := web[0], web[1]
	base := kept.DeepCopy()
	kept.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveWhenFailed}
	if err := controllertest.Env.Client.Patch(ctx, &kept, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}

	setNodeReady(h, kept, false)
	h.Eventually(60*time.Second, "the remediated Machine to be kept by preservation", func() (bool, error) {
		m := getMachine(h, kept.Name)
		return m != nil && m.Status.FailureReason != "" &&
			meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.PreservedCondition), nil
	})
	setNodeReady(h, next, false)
	h.Eventually(60*time.Second, "the second unhealthy Machine to be remediated while the first is kept", func() (bool, error) {
		return replaced(h, next.Name), nil
	})
	if m := getMachine(h, kept.Name); m == nil || !m.DeletionTimestamp.IsZero() {
		t.Errorf("the preserved Machine %s went while preserved", kept.Name)
	}
}
