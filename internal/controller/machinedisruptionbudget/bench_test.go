package machinedisruptionbudget_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
)

// BenchmarkRecountAtAnEvent is the work of one Machine event (a Ready
// change, which wakes every budget selecting the Machine) for a budget
// selecting a deployment's N available Machines: one reconcile, which
// puts the Machine noted in its tally again (read from the cache as
// benchCache does), reads the namespace's budgets, sets and deployments
// and writes the status. The figure does not grow with N
// (docs/benchmarks.md, "Constant work per event").
// go test -run '^$' -bench BenchmarkRecountAtAnEvent
// ./internal/controller/machinedisruptionbudget/
func BenchmarkRecountAtAnEvent(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			c := newBenchCache(n)
			r := &machinedisruptionbudget.Reconciler{Client: c, APIReader: c, Views: c.views(b)}
			req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "web"}}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				b.Fatal(err)
			}
			if c.written == nil || c.written.Status.ExpectedMachines != int32(n) {
				b.Fatalf("the recount wrote %+v, want %d expected Machines", c.written, n)
			}
			defer machinedisruptionbudget.WithoutTallyCheck()()
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

// benchCache answers reads as a cache of the manager does (the Machines
// from an informer's store, views) and keeps the last status written. Only for the benchmark: the tests run on a real
// API server.
type benchCache struct {
	client.Client
	budget   *v1alpha1.MachineDisruptionBudget
	set      *v1alpha1.MachineSet
	md       *v1alpha1.MachineDeployment
	machines []*v1alpha1.Machine
	written  *v1alpha1.MachineDisruptionBudget
}

func newBenchCache(n int) *benchCache {
	now := metav1.NewTime(time.Now().Add(-time.Hour))
	sel := v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	c := &benchCache{}
	c.budget = &v1alpha1.MachineDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{Selector: sel, MaxUnavailable: intstr.FromString("10%")}}
	c.md = &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "md-uid"},
		Spec: v1alpha1.MachineDeploymentSpec{Replicas: int32(n)}}
	yes := true
	c.set = &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "ms-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineDeployment", Name: "web", UID: "md-uid", Controller: &yes}}},
		Spec: v1alpha1.MachineSetSpec{Replicas: int32(n)}}
	for i := range n {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("web-1-%05d", i), Generation: 1,
			Labels: map[string]string{"app": "web"}, CreationTimestamp: now,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet", Name: "web-1", UID: "ms-uid", Controller: &yes}}}}
		m.Status.Phase = v1alpha1.PhaseRunning
		m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: m.Name}
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: "NodeReady", LastTransitionTime: now})
		c.machines = append(c.machines, m)
	}
	return c
}

// views is an informer's store of c's Machines, as the manager's cache
// holds them and ownerindex.Views reads them (the informer never runs).
func (c *benchCache) views(b *testing.B) *ownerindex.Views {
	v := &ownerindex.Views{}
	inf := v.NewInformer(nil, &v1alpha1.Machine{}, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, m := range c.machines {
		if err := inf.GetIndexer().Add(m); err != nil {
			b.Fatal(err)
		}
	}
	return v
}

func (c *benchCache) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	b, ok := obj.(*v1alpha1.MachineDisruptionBudget)
	if !ok {
		return fmt.Errorf("benchCache: no Get of %T", obj)
	}
	c.budget.DeepCopyInto(b)
	return nil
}

// List answers the lists of budgets, sets and deployments (deep copies,
// small); the Machines are read from views.
func (c *benchCache) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *v1alpha1.MachineDisruptionBudgetList:
		l.Items = []v1alpha1.MachineDisruptionBudget{*c.budget.DeepCopy()}
	case *v1alpha1.MachineSetList:
		l.Items = []v1alpha1.MachineSet{*c.set.DeepCopy()}
	case *v1alpha1.MachineDeploymentList:
		l.Items = []v1alpha1.MachineDeployment{*c.md.DeepCopy()}
	default:
		return fmt.Errorf("benchCache: no List of %T", list)
	}
	return nil
}

func (c *benchCache) Status() client.SubResourceWriter { return benchWriter{c: c} }

// benchWriter keeps the budget a status write sends; it takes no other
// write.
type benchWriter struct {
	client.SubResourceWriter
	c *benchCache
}

func (w benchWriter) Patch(_ context.Context, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
	w.c.written = obj.(*v1alpha1.MachineDisruptionBudget).DeepCopy()
	return nil
}
