package machinehealthcheck_test

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

var ctx = context.Background()

// set creates a MachineSet of replicas sim Machines labelled set=name,
// each with a health timeout of its own of one second: were the machine
// controller to judge a Machine a health check selects, it would fail it
// long before any health check here does.
func set(h *controllertest.Harness, name string, replicas int32) {
	h.T.Helper()
	setWithTimeout(h, name, replicas, time.Second)
}

// setWithTimeout is set with the Machines' own health timeout.
func setWithTimeout(h *controllertest.Harness, name string, replicas int32, healthTimeout time.Duration) {
	h.T.Helper()
	h.Create(&v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS},
		Spec: v1alpha1.MachineSetSpec{
			Replicas:                  replicas,
			MaxConcurrentReplacements: ptr.To(replicas),
			Selector:                  v1alpha1.LabelSelector{MatchLabels: map[string]string{"set": name}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"set": name}},
				Spec: v1alpha1.MachineSpec{
					Class:     &v1alpha1.MachineClassReference{Name: "small"},
					Lifecycle: v1alpha1.MachineLifecycle{HealthTimeout: &metav1.Duration{Duration: healthTimeout}},
				},
			},
		},
	})
}

// machinesOf lists the set's Machines not being deleted, by name.
func machinesOf(h *controllertest.Harness, set string) []v1alpha1.Machine {
	h.T.Helper()
	list := &v1alpha1.MachineList{}
	if err := controllertest.Env.Client.List(ctx, list, client.InNamespace(h.NS), client.MatchingLabels{"set": set}); err != nil {
		h.T.Fatal(err)
	}
	var out []v1alpha1.Machine
	for _, m := range list.Items {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// waitRunning waits until the set has n Machines, all Running, and returns them.
func waitRunning(h *controllertest.Harness, set string, n int) []v1alpha1.Machine {
	h.T.Helper()
	var ms []v1alpha1.Machine
	h.Eventually(90*time.Second, "set "+set+" to have its Machines Running", func() (bool, error) {
		ms = machinesOf(h, set)
		if len(ms) != n {
			return false, nil
		}
		for _, m := range ms {
			if m.Status.Phase != v1alpha1.PhaseRunning {
				return false, nil
			}
		}
		return true, nil
	})
	return ms
}

// machine reads a Machine by its full name; nil once it is gone.
func getMachine(h *controllertest.Harness, name string) *v1alpha1.Machine {
	h.T.Helper()
	m := &v1alpha1.Machine{}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: h.NS, Name: name}, m); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		h.T.Fatal(err)
	}
	return m
}

// replaced reports whether the Machine is being replaced: Failed, being
// deleted or gone.
func replaced(h *controllertest.Harness, name string) bool {
	m := getMachine(h, name)
	return m == nil || !m.DeletionTimestamp.IsZero() || m.Status.FailureReason != ""
}

func healthCheck(h *controllertest.Harness, name string, spec v1alpha1.MachineHealthCheckSpec) {
	h.T.Helper()
	h.Create(&v1alpha1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS}, Spec: spec})
}

func getHealthCheck(h *controllertest.Harness, name string) *v1alpha1.MachineHealthCheck {
	h.T.Helper()
	mhc := &v1alpha1.MachineHealthCheck{}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: h.NS, Name: name}, mhc); err != nil {
		h.T.Fatal(err)
	}
	return mhc
}

func selecting(set string) v1alpha1.LabelSelector {
	return v1alpha1.LabelSelector{MatchLabels: map[string]string{"set": set}}
}

func nodeCondition(t, status string, timeout time.Duration) v1alpha1.UnhealthyNodeCondition {
	return v1alpha1.UnhealthyNodeCondition{Type: t, Status: status, Timeout: metav1.Duration{Duration: timeout}}
}

// setNodeReady makes the Machine's Node NotReady (or Ready again) through the sim.
func setNodeReady(h *controllertest.Harness, m v1alpha1.Machine, ready bool) {
	h.T.Helper()
	if _, err := h.Sim.Cloud().SetNodeReady(m.Status.NodeRef.Name, ready); err != nil {
		h.T.Fatal(err)
	}
}

// setNodeCondition sets a condition on the Machine's Node, as a node
// problem detector would.
func setNodeCondition(h *controllertest.Harness, m v1alpha1.Machine, t corev1.NodeConditionType, status corev1.ConditionStatus) {
	h.T.Helper()
	node, err := h.Node(m.Status.NodeRef.Name)
	if err != nil {
		h.T.Fatal(err)
	}
	orig := node.DeepCopy()
	now := metav1.Now()
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
		Type: t, Status: status, Reason: "Test", LastHeartbeatTime: now, LastTransitionTime: now,
	})
	if err := controllertest.Env.Client.Status().Patch(ctx, node, client.StrategicMergeFrom(orig)); err != nil {
		h.T.Fatal(err)
	}
}

func conditionOf(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

type harness = controllertest.Harness

// patchMachine writes the change from orig to m.
func patchMachine(h *harness, orig, m *v1alpha1.Machine) {
	h.T.Helper()
	if err := controllertest.Env.Client.Patch(ctx, m, client.MergeFrom(orig)); err != nil {
		h.T.Fatal(err)
	}
}
