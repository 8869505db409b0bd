package disruption_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// env is the API server the gate's tests write budgets and Machines to:
// the grants are under resourceVersions only a real one checks.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) error { env = e; return nil }))
}

var ctx = context.Background()

var nsSeq atomic.Int64

// namespace makes a namespace of the test's own.
func namespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("gate-%d", nsSeq.Add(1))
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// machine creates a Machine labelled pool, Ready unless ready is false.
func machine(t *testing.T, ns, name, pool string, ready bool) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"pool": pool}},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "small"}},
	}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	status := metav1.ConditionTrue
	if !ready {
		status = metav1.ConditionFalse
	}
	m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: status, Reason: "Test", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// budgetOf creates a budget over pool with the status its controller
// would write: recounted for its generation, allowed disruptions left.
func budgetOf(t *testing.T, ns, name, pool string, maxUnavailable, allowed int32) *v1alpha1.MachineDisruptionBudget {
	t.Helper()
	b := &v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{
			Selector:       v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
			MaxUnavailable: intstr.FromInt32(maxUnavailable),
		},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status = v1alpha1.MachineDisruptionBudgetStatus{ObservedGeneration: b.Generation, MaxUnavailable: maxUnavailable,
		CurrentUnavailable: maxUnavailable - allowed, DisruptionsAllowed: allowed}
	if err := env.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func getBudget(t *testing.T, ns, name string) *v1alpha1.MachineDisruptionBudget {
	t.Helper()
	b := &v1alpha1.MachineDisruptionBudget{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func getMachine(t *testing.T, m *v1alpha1.Machine) *v1alpha1.Machine {
	t.Helper()
	out := &v1alpha1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func grantNames(b *v1alpha1.MachineDisruptionBudget) []string {
	var out []string
	for _, d := range b.Status.DisruptedMachines {
		out = append(out, d.Name)
	}
	return out
}
