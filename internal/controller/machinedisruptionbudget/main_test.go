package machinedisruptionbudget_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/testenv"
)

var env *testenv.Env

// TestMain runs the tests, then fails when a reconcile found a budget's
// kept tally different from one made again from its Machines
// (export_test.go).
func TestMain(m *testing.M) {
	code := testenv.Run(m, func(e *testenv.Env) error { env = e; return nil })
	if d := machinedisruptionbudget.TallyDifferences(); len(d) > 0 {
		fmt.Fprintf(os.Stderr, "%d reconciles found a budget's tally different from its recount; the first: %s\n", len(d), d[0])
		code = 1
	}
	os.Exit(code)
}

var ctx = context.Background()

var nsSeq atomic.Int64

// start makes a namespace of the test's own and runs the budget
// controller. No machine controller runs: the tests write the Machines'
// status themselves.
func start(t *testing.T) string {
	t.Helper()
	ns, _ := startWith(t, nil)
	return ns
}

// namespace makes a namespace of the test's own: a name of its own in
// every run, so that -count=N runs again.
func namespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("mdb-%d", nsSeq.Add(1))
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// startWith is start with the controller's client wrapped by wrap (nil:
// the manager's), and returns the controller.
func startWith(t *testing.T, wrap func(client.Client) client.Client) (string, *machinedisruptionbudget.Reconciler) {
	t.Helper()
	ns := namespace(t)
	// The Machines read as the manager reads them: the cache's own
	// objects (ownerindex.Views).
	views := &ownerindex.Views{}
	opts := testenv.ManagerOptions(env.Scheme)
	opts.Cache.NewInformer = views.NewInformer
	var r *machinedisruptionbudget.Reconciler
	env.StartManagerWith(t, opts, func(mgr ctrl.Manager) error {
		c := mgr.GetClient()
		if wrap != nil {
			c = wrap(c)
		}
		r = &machinedisruptionbudget.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Views: views}
		return r.SetupWithManager(mgr, 2)
	})
	return ns, r
}

// machine creates a Machine with labels, Ready or not.
func machine(t *testing.T, ns, name string, labels map[string]string, ready bool) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "small"}},
	}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	setReady(t, m, ready)
	return m
}

// setReady writes the Machine's Ready condition, as the machine controller
// would, and reads m back.
func setReady(t *testing.T, m *v1alpha1.Machine, ready bool) {
	t.Helper()
	status := metav1.ConditionTrue
	if !ready {
		status = metav1.ConditionFalse
	}
	cur := &v1alpha1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: status, Reason: "Test"})
	if err := env.Client.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	cur.DeepCopyInto(m)
}

func pool(p string) map[string]string { return map[string]string{"pool": p} }

func budget(t *testing.T, ns, name string, selector map[string]string, maxUnavailable intstr.IntOrString) {
	t.Helper()
	if err := env.Client.Create(ctx, &v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{
			Selector:       v1alpha1.LabelSelector{MatchLabels: selector},
			MaxUnavailable: maxUnavailable,
		},
	}); err != nil {
		t.Fatal(err)
	}
}

func getBudget(t *testing.T, ns, name string) *v1alpha1.MachineDisruptionBudget {
	t.Helper()
	b := &v1alpha1.MachineDisruptionBudget{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// waitStatus waits until the budget's status satisfies ok.
func waitStatus(t *testing.T, ns, name, what string, ok func(*v1alpha1.MachineDisruptionBudget) bool) *v1alpha1.MachineDisruptionBudget {
	t.Helper()
	var b *v1alpha1.MachineDisruptionBudget
	testenv.Eventually(t, 30*time.Second, what, func() (bool, error) {
		b = getBudget(t, ns, name)
		return b.Status.ObservedGeneration == b.Generation && ok(b), nil
	})
	return b
}

// counts is a status's expected/max/unavailable/allowed, for comparing.
func counts(b *v1alpha1.MachineDisruptionBudget) string {
	st := b.Status
	return fmt.Sprintf("expected %d max %d unavailable %d allowed %d", st.ExpectedMachines, st.MaxUnavailable, st.CurrentUnavailable, st.DisruptionsAllowed)
}

func condition(b *v1alpha1.MachineDisruptionBudget, t string) *metav1.Condition {
	return meta.FindStatusCondition(b.Status.Conditions, t)
}
