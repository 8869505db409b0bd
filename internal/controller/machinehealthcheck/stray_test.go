package machinehealthcheck_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// TestPassingMachineLosesStrayRemediationRequests: a Machine whose
// passing is recorded already is skipped by a reconcile (it costs no copy
// and no budget read), unless a remediation request is left on it — a
// remediation grant (a reconcile that stopped between the grant and its
// mark) or a remediation wait: the check withdraws each at once, not
// after the grant's two minutes.
func TestPassingMachineLosesStrayRemediationRequests(t *testing.T) {
	h := newHarness(t)
	h.Class("small", `{"region":"local","zones":["local-a"]}`)
	setWithTimeout(h, "web", 1, time.Hour)
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
	m := waitRunning(h, "web", 1)[0]
	h.Eventually(30*time.Second, "the Machine's passing to be recorded", func() (bool, error) {
		c := conditionOf(getMachine(h, m.Name).Status.Conditions, v1alpha1.HealthCheckSucceededCondition)
		return c != nil && c.Status == metav1.ConditionTrue, nil
	})

	cur := getMachine(h, m.Name)
	orig := cur.DeepCopy()
	cur.Status.Conditions = append(cur.Status.Conditions, metav1.Condition{Type: v1alpha1.DisruptionAllowedCondition,
		Status: metav1.ConditionFalse, Reason: disruption.ReasonWaitingForBudget, LastTransitionTime: metav1.Now(),
		Message: string(v1alpha1.DisruptionRemediation) + " waits for MachineDisruptionBudget web: left by a test"})
	if err := controllertest.Env.Client.Status().Patch(ctx, cur, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the stray remediation wait to be withdrawn", func() (bool, error) {
		return conditionOf(getMachine(h, m.Name).Status.Conditions, v1alpha1.DisruptionAllowedCondition) == nil, nil
	})

	budget := &v1alpha1.MachineDisruptionBudget{}
	key := client.ObjectKey{Namespace: h.NS, Name: "web"}
	h.Eventually(30*time.Second, "the budget to allow a disruption", func() (bool, error) {
		err := controllertest.Env.Client.Get(ctx, key, budget)
		return err == nil && budget.Status.DisruptionsAllowed == 1, err
	})
	base := budget.DeepCopy()
	budget.Status.DisruptedMachines = append(budget.Status.DisruptedMachines, v1alpha1.DisruptedMachine{
		Name: m.Name, Kind: v1alpha1.DisruptionRemediation, GrantedAt: metav1.Now()})
	budget.Status.DisruptionsAllowed--
	if err := controllertest.Env.Client.Status().Patch(ctx, budget, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the stray remediation grant to be withdrawn", func() (bool, error) {
		if err := controllertest.Env.Client.Get(ctx, key, budget); err != nil {
			return false, err
		}
		return len(budget.Status.DisruptedMachines) == 0, nil
	})
	if replaced(h, m.Name) {
		t.Errorf("Machine %s was replaced, though it passes", m.Name)
	}
}
