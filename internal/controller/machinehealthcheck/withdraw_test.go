package machinehealthcheck_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestRemediationWaitIsWithdrawn: a Machine whose remediation waits for a
// budget (maxUnavailable 0) loses its DisruptionAllowed=False when it
// recovers, and again when, waiting once more, its health check is
// deleted: nothing asks for it any more, so nothing may say it waits.
func TestRemediationWaitIsWithdrawn(t *testing.T) {
	h := newHarness(t)
	h.Class("small", `{"region":"local","zones":["local-a"]}`)
	setWithTimeout(h, "web", 2, time.Hour)
	healthCheck(h, "web", v1alpha1.MachineHealthCheckSpec{
		Selector: selecting("web"),
		Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
			nodeCondition("example.com/GPUFailed", "True", time.Second),
		}},
	})
	h.Create(&v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: h.NS},
		Spec:       v1alpha1.MachineDisruptionBudgetSpec{Selector: selecting("web"), MaxUnavailable: intstr.FromInt32(0)},
	})
	m := waitRunning(h, "web", 2)[0]
	waiting := func() *metav1.Condition {
		return conditionOf(getMachine(h, m.Name).Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	}
	waits := func(what string) {
		setGPU(h, m, corev1.ConditionTrue)
		h.Eventually(30*time.Second, what, func() (bool, error) {
			c := waiting()
			return c != nil && c.Status == metav1.ConditionFalse, nil
		})
	}

	waits("the remediation to wait for the budget")
	setGPU(h, m, corev1.ConditionFalse)
	h.Eventually(30*time.Second, "the recovered Machine's wait to be withdrawn", func() (bool, error) {
		return waiting() == nil, nil
	})

	waits("the remediation to wait again")
	if err := controllertest.Env.Client.Delete(ctx, getHealthCheck(h, "web")); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the wait to be withdrawn with its health check", func() (bool, error) {
		return waiting() == nil, nil
	})
	if replaced(h, m.Name) {
		t.Errorf("Machine %s was replaced under a budget of 0", m.Name)
	}
}

// setGPU sets the Node's example.com/GPUFailed condition, adding it the
// first time.
func setGPU(h *controllertest.Harness, m v1alpha1.Machine, status corev1.ConditionStatus) {
	h.T.Helper()
	node, err := h.Node(m.Status.NodeRef.Name)
	if err != nil {
		h.T.Fatal(err)
	}
	orig := node.DeepCopy()
	now := metav1.Now()
	c := corev1.NodeCondition{Type: "example.com/GPUFailed", Status: status, Reason: "Test", LastHeartbeatTime: now, LastTransitionTime: now}
	found := false
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == c.Type {
			node.Status.Conditions[i], found = c, true
		}
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, c)
	}
	if err := controllertest.Env.Client.Status().Patch(ctx, node, client.StrategicMergeFrom(orig)); err != nil {
		h.T.Fatal(err)
	}
}
