package machinehealthcheck_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinehealthcheck"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// TestAWaveOfNewMachinesIsRecordedInBoundedReconciles: a reconcile writes
// at most FirstRecordsPerReconcile first passing records and asks to run
// again at once; the next writes the rest. A recovered Machine's
// withdrawal (OwnerRemediated removed) does not wait behind the wave,
// though it comes after it by name. The reconciles are called one by one,
// against the API server, so each one's writes are counted.
func TestAWaveOfNewMachinesIsRecordedInBoundedReconciles(t *testing.T) {
	c := controllertest.Env.Client
	ns := fmt.Sprintf("first-records-%d", time.Now().UnixNano())
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	wave := machinehealthcheck.FirstRecordsPerReconcile + 3
	for i := range wave {
		createLabelled(t, ns, fmt.Sprintf("new-%03d", i))
	}
	recovered := createLabelled(t, ns, "zz-recovered")
	recovered.Status.Conditions = []metav1.Condition{{Type: v1alpha1.OwnerRemediatedCondition, Status: metav1.ConditionFalse,
		Reason: machinehealthcheck.ReasonWaitingForRemediation, Message: "was unhealthy", LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, recovered); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &v1alpha1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "wave", Namespace: ns},
		Spec: v1alpha1.MachineHealthCheckSpec{Selector: selecting("wave"), Checks: v1alpha1.MachineHealthCheckChecks{
			UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{nodeCondition("Ready", "False", time.Minute)}}}}); err != nil {
		t.Fatal(err)
	}
	r := &machinehealthcheck.Reconciler{Client: c, APIReader: c, Target: c, Gate: &disruption.Gate{Client: c, APIReader: c}}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "wave"}}

	res, err := r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := recordedIn(t, ns), machinehealthcheck.FirstRecordsPerReconcile+1; got != want {
		t.Fatalf("the first reconcile recorded %d Machines as passing; want %d (the bound, and the recovered one)", got, want)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 100*time.Millisecond {
		t.Fatalf("the first reconcile, records left to write, asks to run again in %s; want at once", res.RequeueAfter)
	}
	got := &v1alpha1.Machine{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(recovered), got); err != nil {
		t.Fatal(err)
	}
	if conditionOf(got.Status.Conditions, v1alpha1.OwnerRemediatedCondition) != nil {
		t.Fatal("the recovered Machine still asks its owner for a remediation after the first reconcile")
	}

	res, err = r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := recordedIn(t, ns); got != wave+1 {
		t.Fatalf("after the second reconcile %d Machines are recorded as passing; want all %d", got, wave+1)
	}
	if res.RequeueAfter < time.Second {
		t.Fatalf("the second reconcile, nothing left to write, asks to run again in %s", res.RequeueAfter)
	}
}

// createLabelled creates a Machine the health check "wave" selects: no VM,
// no Node, no create started, so it passes a check without a node
// startup timeout.
func createLabelled(t *testing.T, ns, name string) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"set": "wave"}},
		Spec: v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "small"}}}
	if err := controllertest.Env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// recordedIn counts the Machines of ns whose HealthCheckSucceeded is True.
func recordedIn(t *testing.T, ns string) int {
	t.Helper()
	list := &v1alpha1.MachineList{}
	if err := controllertest.Env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range list.Items {
		if c := conditionOf(m.Status.Conditions, v1alpha1.HealthCheckSucceededCondition); c != nil && c.Status == metav1.ConditionTrue {
			n++
		}
	}
	return n
}
