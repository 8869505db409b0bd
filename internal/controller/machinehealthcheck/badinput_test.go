package machinehealthcheck_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

func readyFalse() v1alpha1.MachineHealthCheckSpec {
	return v1alpha1.MachineHealthCheckSpec{
		Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
			nodeCondition("Ready", "False", time.Second),
		}},
	}
}

// TestConflictingHealthChecksJudgeNeitherUntilOneGoes: two health checks
// selecting the same Machines both say so, and neither (nor the
// Machines' own health timeout) replaces an unhealthy one until one
// health check is deleted. A selector matching nothing expects 0.
func TestConflictingHealthChecksJudgeNeitherUntilOneGoes(t *testing.T) {
	h := newHarness(t)
	h.Class("small", `{"region":"local","zones":["local-a"]}`)
	set(h, "pair", 2)
	for _, name := range []string{"one", "two"} {
		spec := readyFalse()
		spec.Selector = selecting("pair")
		healthCheck(h, name, spec)
	}
	nothing := readyFalse()
	nothing.Selector = selecting("no-such-set")
	healthCheck(h, "nothing", nothing)

	ms := waitRunning(h, "pair", 2)
	for _, name := range []string{"one", "two"} {
		h.Eventually(30*time.Second, "health check "+name+" to report the conflict", func() (bool, error) {
			c := conditionOf(getHealthCheck(h, name).Status.Conditions, v1alpha1.SelectionConflictCondition)
			return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, ms[0].Name), nil
		})
	}
	h.Eventually(30*time.Second, "the selector matching nothing to expect 0", func() (bool, error) {
		mhc := getHealthCheck(h, "nothing")
		return mhc.Status.ObservedGeneration == mhc.Generation && mhc.Status.ExpectedMachines == 0 &&
			statusOf(mhc, v1alpha1.SelectionConflictCondition) == metav1.ConditionFalse, nil
	})

	setNodeReady(h, ms[0], false)
	h.Eventually(30*time.Second, "the Machine to say why it is not judged", func() (bool, error) {
		c := conditionOf(getMachine(h, ms[0].Name).Status.Conditions, v1alpha1.HealthCheckSucceededCondition)
		return c != nil && c.Status == metav1.ConditionUnknown && c.Reason == "SelectionConflict", nil
	})
	h.Consistently(3*time.Second, "the Machine under conflicting health checks not to be replaced", func() (bool, error) {
		if replaced(h, ms[0].Name) {
			return false, fmt.Errorf("Machine %s was replaced while two health checks select it", ms[0].Name)
		}
		return true, nil
	})

	// One goes: the other judges alone and replaces the Machine.
	if err := controllertest.Env.Client.Delete(ctx, getHealthCheck(h, "two")); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the remaining health check to replace the Machine", func() (bool, error) {
		return replaced(h, ms[0].Name), nil
	})
	// The replacement and the status write are separate events: wait for
	// the status too.
	h.Eventually(30*time.Second, "the remaining health check to report no conflict", func() (bool, error) {
		return statusOf(getHealthCheck(h, "one"), v1alpha1.SelectionConflictCondition) == metav1.ConditionFalse, nil
	})
}

// TestSkipRemediationAndPausedMachinesAreNeverRemediated: they are
// judged unhealthy and listed, but not replaced.
func TestSkipRemediationAndPausedMachinesAreNeverRemediated(t *testing.T) {
	h := newHarness(t)
	h.Class("small", `{"region":"local","zones":["local-a"]}`)
	set(h, "keep", 2)
	spec := readyFalse()
	spec.Selector = selecting("keep")
	healthCheck(h, "keep", spec)
	ms := waitRunning(h, "keep", 2)
	for i, key := range []string{v1alpha1.SkipRemediationAnnotation, v1alpha1.PausedAnnotation} {
		m := getMachine(h, ms[i].Name)
		orig := m.DeepCopy()
		m.Annotations = map[string]string{key: "true"}
		patchMachine(h, orig, m)
		setNodeReady(h, ms[i], false)
	}
	h.Eventually(30*time.Second, "both Machines to be listed unhealthy and not remediated", func() (bool, error) {
		mhc := getHealthCheck(h, "keep")
		n := 0
		for _, u := range mhc.Status.UnhealthyMachines {
			if strings.Contains(u.Reason, "not remediated") {
				n++
			}
		}
		return n == 2, nil
	})
	h.Consistently(3*time.Second, "neither Machine to be replaced", func() (bool, error) {
		for _, m := range ms {
			if replaced(h, m.Name) {
				return false, fmt.Errorf("Machine %s was replaced although skip-remediation or paused", m.Name)
			}
		}
		return true, nil
	})
}
