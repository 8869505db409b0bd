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
	drainingMachine(t, ns, "drain-m", "golden-node-drain", func(m *v1alpha1.Machine) {
		start := m.Status.Deletion.StartTime.Time
		m.Status.Deletion.Drain = &v1alpha1.DrainStatus{Attempts: 4, LastRefusedTime: &metav1.Time{Time: start.Add(20 * time.Second)}}
		m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationDrain, State: v1alpha1.OperationProcessing,
			Description:    "draining Node golden-node-drain: 1 pod refused by a PodDisruptionBudget (attempt 4/10: golden-drain/web-1)",
			LastUpdateTime: metav1.NewTime(start.Add(20 * time.Second))}
	})
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

// TestDrainStatusRulesTable: the MachineDrainRules selecting the Machine
// and the pods' drain label decide what drain status lists, as they decide
// what the drain does: a pod a rule skips and one labelled skip are left
// out, pods of two orders are listed lowest first (the later one blocked
// by the first), a pod labelled wait-completed is listed last as waited
// for, and a rule selecting other Machines changes nothing.
func TestDrainStatusRulesTable(t *testing.T) {
	const ns = "golden-drain-rules"
	namespace(t, ns)
	node(t, "golden-node-rules", corev1.ConditionTrue, true)
	pod(t, ns, "web-1", "golden-node-rules", corev1.PodRunning, map[string]string{"app": "web"}, "ReplicaSet")
	pod(t, ns, "db-1", "golden-node-rules", corev1.PodRunning, map[string]string{"app": "db"}, "StatefulSet")
	pod(t, ns, "logs-1", "golden-node-rules", corev1.PodRunning, map[string]string{"app": "logs"}, "ReplicaSet")
	pod(t, ns, "cache-1", "golden-node-rules", corev1.PodRunning,
		map[string]string{"app": "cache", v1alpha1.DrainLabel: v1alpha1.DrainLabelSkip}, "")
	pod(t, ns, "report-1", "golden-node-rules", corev1.PodRunning,
		map[string]string{"app": "report", v1alpha1.DrainLabel: v1alpha1.DrainLabelWaitCompleted}, "")
	rule := func(name string, behavior v1alpha1.DrainBehavior, order *int32, machines, pods map[string]string) {
		t.Helper()
		r := &v1alpha1.MachineDrainRule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.MachineDrainRuleSpec{Drain: v1alpha1.MachineDrainRuleDrainConfig{Behavior: behavior, Order: order},
				Pods: []v1alpha1.MachineDrainRulePodSelector{{Selector: &v1alpha1.LabelSelector{MatchLabels: pods}}}}}
		if machines != nil {
			r.Spec.Machines = []v1alpha1.MachineDrainRuleMachineSelector{{Selector: &v1alpha1.LabelSelector{MatchLabels: machines}}}
		}
		create(t, r)
	}
	rule("db-last", v1alpha1.DrainBehaviorDrain, ptrTo(int32(1)), map[string]string{v1alpha1.MachineDeploymentNameLabel: "web"}, map[string]string{"app": "db"})
	rule("logs-stay", v1alpha1.DrainBehaviorSkip, nil, nil, map[string]string{"app": "logs"})
	// Selects other Machines only: web-1 is still evicted, in order 0.
	rule("other-web", v1alpha1.DrainBehaviorSkip, nil, map[string]string{v1alpha1.MachineDeploymentNameLabel: "other"}, map[string]string{"app": "web"})
	drainingMachine(t, ns, "rules-m", "golden-node-rules", func(m *v1alpha1.Machine) {
		m.Status.Deletion.Drain = &v1alpha1.DrainStatus{Attempts: 1, Order: ptrTo(int32(0))}
	})

	c := newCLI(t, ns)
	golden(t, "drain-status-rules", c.ok("drain", "status", "rules-m"))
	out := c.ok("describe", "machine", "rules-m")
	want := "Waiting for:  the drain: 3 pod(s) still on the Node: golden-drain-rules/web-1; golden-drain-rules/db-1; golden-drain-rules/report-1 (waits for completion)"
	if !strings.Contains(out, want) {
		t.Errorf("describe of a Machine in a drain with rules: no %q in\n%s", want, out)
	}
}

// drainingMachine creates a Machine of the MachineDeployment web on the
// Node nodeName, deletes it (a finalizer holds it) and sets its status to
// the drain step; status adds to that.
func drainingMachine(t *testing.T, ns, name, nodeName string, status func(m *v1alpha1.Machine)) *v1alpha1.Machine {
	t.Helper()
	m := machine(t, ns, name, "small", "web", "web-111", "sim://r/a/vm-"+name, nil)
	m.Finalizers = []string{"kubectl.test.millwright.dev/hold"}
	if err := controllertest.Env.Client.Update(bg, m); err != nil {
		t.Fatal(err)
	}
	if err := controllertest.Env.Client.Delete(bg, m); err != nil {
		t.Fatal(err)
	}
	if err := controllertest.Env.Client.Get(bg, objectKey(ns, name), m); err != nil {
		t.Fatal(err)
	}
	start := m.DeletionTimestamp.Time
	m.Status.Phase = v1alpha1.PhaseTerminating
	m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: nodeName}
	m.Status.Deletion = &v1alpha1.MachineDeletionStatus{Step: v1alpha1.StepDrain, StartTime: metav1.NewTime(start),
		StepStartTime: metav1.NewTime(start.Add(time.Second))}
	status(m)
	setStatus(t, m)
	return m
}
