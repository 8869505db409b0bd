package machinedeployment_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// TestInPlaceStartsWaitForTheDisruptionBudget: maxUnavailable 3 would
// start all three in-place updates at once; a budget of one starts one.
// Without an executor the first start stays granted, and the second waits
// — told so on the Machine and on the deployment's DisruptionAllowed
// condition, with no write of its start (neither set lists it). Once the
// executor runs, the Machines are updated one at a time.
func TestInPlaceStartsWaitForTheDisruptionBudget(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.deployment("web", 3, "small", inPlace(v1alpha1.InPlaceAuto, 3, 0))
	h.waitComplete("web", 90*time.Second)
	before := h.machines("web")
	h.Create(&v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: h.NS},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: intstr.FromInt32(1)},
	})
	h.Eventually(30*time.Second, "the budget to allow one disruption", func() (bool, error) {
		b := &v1alpha1.MachineDisruptionBudget{}
		err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: h.NS, Name: "web"}, b)
		return err == nil && b.Status.ExpectedMachines == 3 && b.Status.DisruptionsAllowed == 1, err
	})

	w := h.watch("web", inTransitBound(names(before), 1))
	log := h.writeLog()
	h.update("web", useVersion("v1.31.0"))
	var started, waits string
	h.Eventually(60*time.Second, "one update started, the next waiting for the budget", func() (bool, error) {
		started, waits = "", ""
		for _, m := range h.machines("web") {
			if m.Annotations[v1alpha1.InPlaceTargetAnnotation] != "" {
				if started != "" {
					return false, fmt.Errorf("two in-place updates started under a budget of one: %s, %s", started, m.Name)
				}
				started = m.Name
			}
			if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition); c != nil &&
				c.Reason == disruption.ReasonWaitingForBudget && strings.HasPrefix(c.Message, "InPlaceUpdate waits for MachineDisruptionBudget web") {
				waits = m.Name
			}
		}
		return started != "" && waits != "", nil
	})
	for _, ms := range h.sets("web") {
		lists := machinefacts.InPlaceNames(ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation])
		lists = append(lists, machinefacts.InPlaceNames(ms.Annotations[v1alpha1.InPlaceMovingInAnnotation])...)
		if slices.Contains(lists, waits) {
			t.Errorf("set %s lists %s, whose start waits for the budget: a half-written start", ms.Name, waits)
		}
	}
	h.Eventually(30*time.Second, "the deployment to say a start waits", func() (bool, error) {
		c := h.condition("web", v1alpha1.DisruptionAllowedCondition)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, waits), nil
	})
	h.ExpectEvent("WaitingForDisruptionBudget", h.md("web").Name)

	// The version goes to the node agent, which the test plays.
	h.nodeAgent(func(string, int) bool { return true })
	h.waitComplete("web", 120*time.Second)
	w.finish(t)
	if got := log.started(); !slices.Equal(slices.Sorted(slices.Values(got)), names(before)) {
		t.Errorf("updates started: %v, want each of %v once", got, names(before))
	}
	h.Eventually(30*time.Second, "the deployment's waiting condition to go", func() (bool, error) {
		return h.condition("web", v1alpha1.DisruptionAllowedCondition) == nil, nil
	})
}
