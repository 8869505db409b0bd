package kubectl_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestDrainStatusTable: a Machine being deleted, in its drain step, whose
// Node still has a pod a budget protects, a pod nothing protects, a
// DaemonSet pod (stays) and a finished pod (gone).
func TestDrainStatusTable(t *testing.T) {
	const ns = "golden-drain"
	namespace(t, ns)
	node(t, "golden-node-drain", corev1.ConditionTrue, true)
	pod(t, ns, "web-1", "golden-node-drain", corev1.PodRunning, map[string]string{"app": "web"}, "ReplicaSet")
	pod(t, ns, "batch-1", "golden-node-drain", corev1.PodRunning, map[string]string{"app": "batch"}, "")
	pod(t, ns, "agent-1", "golden-node-drain", corev1.PodRunning, map[string]string{"app": "web"}, "DaemonSet")
	pod(t, ns, "done-1", "golden-node-drain", corev1.PodSucceeded, map[string]string{"app": "web"}, "")
	create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	})
	m := machine(t, ns, "drain-m", "small", "web", "web-111", "sim://r/a/vm-d", nil)
	m.Finalizers = []string{"kubectl.test.millwright.dev/hold"}
	if err := controllertest.Env.Client.Update(bg, m); err != nil {
		t.Fatal(err)
	}
	if err := controllertest.Env.Client.Delete(bg, m); err != nil {
		t.Fatal(err)
	}
	if err := controllertest.Env.Client.Get(bg, objectKey(ns, "drain-m"), m); err != nil {
		t.Fatal(err)
	}
	start := m.DeletionTimestamp.Time
	m.Status.Phase = v1alpha1.PhaseTerminating
	m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: "golden-node-drain"}
	m.Status.Deletion = &v1alpha1.MachineDeletionStatus{Step: v1alpha1.StepDrain, StartTime: metav1.NewTime(start),
		StepStartTime: metav1.NewTime(start.Add(time.Second)),
		Drain:         &v1alpha1.DrainStatus{Attempts: 4, LastRefusedTime: &metav1.Time{Time: start.Add(20 * time.Second)}}}
	m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationDrain, State: v1alpha1.OperationProcessing,
		Description:    "draining Node golden-node-drain: 1 pod refused by a PodDisruptionBudget (attempt 4/10: golden-drain/web-1)",
		LastUpdateTime: metav1.NewTime(start.Add(20 * time.Second))}
	setStatus(t, m)

	c := newCLI(t, ns)
	golden(t, "drain-status", c.ok("drain", "status", "drain-m"))
	out := c.ok("describe", "machine", "drain-m")
	for _, want := range []string{
		"Phase:        Terminating",
		"Reason:       Drain",
		"deletion step Drain started",
		"drain blocked",
		"Waiting for:  the drain: 2 pod(s) still on the Node: golden-drain/batch-1; golden-drain/web-1 (blocked by PodDisruptionBudget golden-drain/web)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe of a Machine in its drain: no %q in\n%s", want, out)
		}
	}
}
