package machinehealthcheck_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// TestRemediationWaitsForTheDisruptionBudget: two Machines fail a health
// check while their Nodes stay Ready (a GPU fault): under a budget of one
// unavailable Machine, one is replaced and the other waits — told so on
// its DisruptionAllowed condition, in an Event and on the budget — until
// the first one's replacement is Running; then it is replaced too.
func TestRemediationWaitsForTheDisruptionBudget(t *testing.T) {
	h := newHarness(t)
	// A VM's Node registers 3 s after its creation, so the test sees the
	// second Machine wait before the first one's replacement is Running
	// and frees the budget: without the delay the replacement was Running
	// within a second, the second Machine rightly granted, and the test
	// took the two for a budget overrun (CI, 2026-12-03).
	h.Class("small", `{"region":"local","zones":["local-a"],"bootDelay":"3s"}`)
	setWithTimeout(h, "web", 3, time.Hour)
	healthCheck(h, "web", v1alpha1.MachineHealthCheckSpec{
		Selector: selecting("web"),
		Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
			nodeCondition("example.com/GPUFailed", "True", time.Second),
		}},
	})
	h.Create(&v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: h.NS},
		Spec:       v1alpha1.MachineDisruptionBudgetSpec{Selector: selecting("web"), MaxUnavailable: intstr.FromInt32(1)},
	})
	web := waitRunning(h, "web", 3)
	h.Eventually(30*time.Second, "the budget to allow one disruption", func() (bool, error) {
		return getBudget(h, "web").Status.DisruptionsAllowed == 1, nil
	})

	setNodeCondition(h, web[0], "example.com/GPUFailed", corev1.ConditionTrue)
	setNodeCondition(h, web[1], "example.com/GPUFailed", corev1.ConditionTrue)
	var first, second string
	h.Eventually(60*time.Second, "one Machine replaced, the other waiting for the budget", func() (bool, error) {
		r0, r1 := replaced(h, web[0].Name), replaced(h, web[1].Name)
		if r0 && r1 {
			return false, fmt.Errorf("both Machines were replaced at once under a budget of one")
		}
		if r0 == r1 {
			return false, nil
		}
		first, second = web[0].Name, web[1].Name
		if r1 {
			first, second = second, first
		}
		c := conditionOf(getMachine(h, second).Status.Conditions, v1alpha1.DisruptionAllowedCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == disruption.ReasonWaitingForBudget &&
			strings.Contains(c.Message, "Remediation waits for MachineDisruptionBudget web"), nil
	})
	h.ExpectEvent(disruption.ReasonWaitingForBudget, second)
	h.Eventually(30*time.Second, "the budget to list the waiting Machine", func() (bool, error) {
		w := getBudget(h, "web").Status.WaitingMachines
		return len(w) == 1 && w[0].Name == second, nil
	})

	// The first one's replacement Running frees the budget: the second goes.
	h.Eventually(90*time.Second, "the second Machine to be replaced once the first is", func() (bool, error) {
		if !replaced(h, second) {
			return false, nil
		}
		if m := getMachine(h, first); m != nil {
			t.Errorf("%s was replaced while %s was still there", second, first)
		}
		return true, nil
	})
	waitRunning(h, "web", 3)
}

func getBudget(h *controllertest.Harness, name string) *v1alpha1.MachineDisruptionBudget {
	h.T.Helper()
	b := &v1alpha1.MachineDisruptionBudget{}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: h.NS, Name: name}, b); err != nil {
		h.T.Fatal(err)
	}
	return b
}
