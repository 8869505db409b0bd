package machinehealthcheck_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinehealthcheck"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// BenchmarkReconcileAtAnEvent is the work of one Machine event for the
// health check selecting a fleet of N passing Machines under a budget:
// one reconcile of the check, the event's Machine noted as the watch
// notes it. The reads are those of the manager's cache as benchCache
// makes them (a List deep-copies each object unless told not to, a Get
// copies it); nothing is written, the fleet having passed before.
// go test -run '^$' -bench BenchmarkReconcileAtAnEvent
// ./internal/controller/machinehealthcheck/ (docs/benchmarks.md).
func BenchmarkReconcileAtAnEvent(b *testing.B) {
	defer machinehealthcheck.WithoutJudgementCheck()()
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			c := newBenchCache(n)
			r := &machinehealthcheck.Reconciler{Client: c, APIReader: c, Target: c, Gate: &disruption.Gate{Client: c}}
			req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "web"}}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.NoteChanged(req.NamespacedName, c.machines[i%n].Name)
				if _, err := r.Reconcile(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchCache answers reads as a cache of the manager does (copies unless
// a List is told client.UnsafeDisableDeepCopy) and takes every write
// without storing it. Only for the benchmark: the tests run on a real
// API server.
type benchCache struct {
	client.Client
	check    *v1alpha1.MachineHealthCheck
	budget   *v1alpha1.MachineDisruptionBudget
	machines []*v1alpha1.Machine
	byName   map[string]*v1alpha1.Machine
	nodes    map[string]*corev1.Node
}

func newBenchCache(n int) *benchCache {
	now := metav1.NewTime(time.Now().Add(-time.Hour))
	c := &benchCache{nodes: map[string]*corev1.Node{}, byName: map[string]*v1alpha1.Machine{}}
	c.check = &v1alpha1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1},
		Spec: v1alpha1.MachineHealthCheckSpec{
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Checks: v1alpha1.MachineHealthCheckChecks{
				NodeStartupTimeout: &metav1.Duration{Duration: 10 * time.Minute},
				UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
					{Type: "Ready", Status: "False", Timeout: metav1.Duration{Duration: 5 * time.Minute}}},
			},
		}}
	c.budget = &v1alpha1.MachineDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{Selector: c.check.Spec.Selector, MaxUnavailable: intstr.FromInt32(1)}}
	for i := range n {
		name := fmt.Sprintf("web-%05d", i)
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1,
			Labels: map[string]string{"app": "web"}, CreationTimestamp: now}}
		m.Status.Phase = v1alpha1.MachinePhase("Running")
		m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: name}
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: "NodeReady", LastTransitionTime: now})
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1alpha1.HealthCheckSucceededCondition,
			Status: metav1.ConditionTrue, Reason: machinehealthcheck.ReasonSucceeded, Message: "the Machine passes its health check",
			ObservedGeneration: 1, LastTransitionTime: now})
		c.machines = append(c.machines, m)
		c.byName[name] = m
		c.nodes[name] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: "Ready", Status: "True", LastTransitionTime: now},
				{Type: "MemoryPressure", Status: "False", LastTransitionTime: now},
				{Type: "DiskPressure", Status: "False", LastTransitionTime: now},
			}}}
	}
	return c
}

func (c *benchCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *v1alpha1.MachineHealthCheck:
		c.check.DeepCopyInto(o)
	case *v1alpha1.MachineDisruptionBudget:
		c.budget.DeepCopyInto(o)
	case *corev1.Node:
		c.nodes[key.Name].DeepCopyInto(o)
	case *v1alpha1.Machine:
		c.byName[key.Name].DeepCopyInto(o)
	default:
		return fmt.Errorf("benchCache: no Get of %T", obj)
	}
	return nil
}

func (c *benchCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	shallow := o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy
	switch l := list.(type) {
	case *v1alpha1.MachineHealthCheckList:
		l.Items = []v1alpha1.MachineHealthCheck{*c.check.DeepCopy()}
	case *v1alpha1.MachineDisruptionBudgetList:
		l.Items = []v1alpha1.MachineDisruptionBudget{*c.budget.DeepCopy()}
	case *v1alpha1.MachineList:
		l.Items = make([]v1alpha1.Machine, 0, len(c.machines))
		for _, m := range c.machines {
			if !shallow {
				m = m.DeepCopy()
			}
			l.Items = append(l.Items, *m)
		}
	default:
		return fmt.Errorf("benchCache: no List of %T", list)
	}
	return nil
}

func (c *benchCache) Status() client.SubResourceWriter { return benchWriter{} }

// benchWriter takes every status write.
type benchWriter struct{ client.SubResourceWriter }

func (benchWriter) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return nil
}
