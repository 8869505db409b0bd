package machinehealthcheck_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// TestShortCircuitHoldsAZoneOutageBackAndResumes: a zone of 5 Machines
// goes NotReady, a Node a second; with unhealthyLessThanOrEqualTo 40%
// nothing is remediated, the status and an Event say why; when 3
// recover, the other 2 are replaced.
//
// When the first Node's timeout runs out only it is unhealthy: the four
// that went dark after it are failing, and count too. Counted as healthy
// (as they once were), 1 of 5 was within the limit and the first
// Machines were replaced before the rest of the zone was judged.
func TestShortCircuitHoldsAZoneOutageBackAndResumes(t *testing.T) {
	h := newHarness(t)
	h.Class("small", `{"region":"local","zones":["local-a"]}`)
	set(h, "zone", 5)
	healthCheck(h, "zone", v1alpha1.MachineHealthCheckSpec{
		Selector: selecting("zone"),
		// The timeout outlasts the five flips (about 5 s) with room for a
		// loaded machine: a Node still Ready at the first timeout counts
		// as healthy, and rightly so.
		Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
			nodeCondition("Ready", "False", 10*time.Second),
			nodeCondition("Ready", "Unknown", 10*time.Second),
		}},
		Remediation: v1alpha1.MachineHealthCheckRemediation{
			TriggerIf: &v1alpha1.MachineHealthCheckTriggerIf{UnhealthyLessThanOrEqualTo: ptrTo(intstr.FromString("40%"))},
		},
	})
	zone := waitRunning(h, "zone", 5)
	// Condition times have whole seconds: each Node goes dark once the
	// previous one's NotReady is recorded and the clock has left its
	// second, so their timeouts run out one after another.
	var last time.Time
	for _, m := range zone {
		h.Eventually(5*time.Second, "the second of the last NotReady to pass", func() (bool, error) {
			return time.Now().Truncate(time.Second).After(last), nil
		})
		setNodeReady(h, m, false)
		h.Eventually(30*time.Second, "Node "+m.Status.NodeRef.Name+" to be NotReady", func() (bool, error) {
			node, err := h.Node(m.Status.NodeRef.Name)
			if err != nil {
				return false, err
			}
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
					last = c.LastTransitionTime.Time
					return true, nil
				}
			}
			return false, nil
		})
	}

	var mhc *v1alpha1.MachineHealthCheck
	h.Eventually(30*time.Second, "the health check to hold remediation back", func() (bool, error) {
		mhc = getHealthCheck(h, "zone")
		for _, m := range zone {
			if replaced(h, m.Name) {
				return false, fmt.Errorf("Machine %s was replaced as the zone went dark", m.Name)
			}
		}
		c := conditionOf(mhc.Status.Conditions, v1alpha1.RemediationAllowedCondition)
		return c != nil && c.Status == metav1.ConditionFalse && len(mhc.Status.UnhealthyMachines) == 5, nil
	})
	c := conditionOf(mhc.Status.Conditions, v1alpha1.RemediationAllowedCondition)
	if !strings.Contains(c.Message, "5 of 5 Machines are unhealthy") || !strings.Contains(c.Message, "40%") {
		t.Errorf("RemediationAllowed says %q; want the count and the limit", c.Message)
	}
	if mhc.Status.ExpectedMachines != 5 || mhc.Status.CurrentHealthy != 0 || mhc.Status.RemediationsAllowed != 0 || len(mhc.Status.UnhealthyMachines) != 5 {
		t.Errorf("status = %+v", mhc.Status)
	}
	h.ExpectEvent("RemediationRestricted", "zone")
	// Held back: neither the health check nor the Machines' own
	// one-second health timeout replaces anything.
	h.Consistently(3*time.Second, "no Machine of the dark zone to be replaced", func() (bool, error) {
		for _, m := range zone {
			if replaced(h, m.Name) {
				return false, fmt.Errorf("Machine %s was replaced during the outage", m.Name)
			}
			if c := conditionOf(getMachine(h, m.Name).Status.Conditions, v1alpha1.OwnerRemediatedCondition); c != nil {
				return false, fmt.Errorf("Machine %s was marked %+v during the outage", m.Name, c)
			}
		}
		return true, nil
	})

	// 3 recover: 2 unhealthy of 5 is 40%, within the limit.
	for _, m := range zone[:3] {
		setNodeReady(h, m, true)
	}
	h.Eventually(60*time.Second, "the 2 still dark to be replaced", func() (bool, error) {
		for _, m := range zone[:3] {
			if replaced(h, m.Name) {
				return false, fmt.Errorf("recovered Machine %s was replaced", m.Name)
			}
		}
		return replaced(h, zone[3].Name) && replaced(h, zone[4].Name), nil
	})
	h.ExpectEvent("RemediationResumed", "zone")
	h.ExpectEvent(machine.FailureHealthCheck, zone[3].Name, zone[4].Name)
	waitRunning(h, "zone", 5)
	h.Eventually(30*time.Second, "the health check to count 5 healthy", func() (bool, error) {
		mhc = getHealthCheck(h, "zone")
		return mhc.Status.CurrentHealthy == 5 && statusOf(mhc, v1alpha1.RemediationAllowedCondition) == metav1.ConditionTrue, nil
	})
}

func ptrTo[T any](v T) *T { return &v }

func statusOf(mhc *v1alpha1.MachineHealthCheck, t string) metav1.ConditionStatus {
	if c := conditionOf(mhc.Status.Conditions, t); c != nil {
		return c.Status
	}
	return ""
}
