package machine

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
)

// SetupWithManager registers the controller: Machines and MachineClasses
// from the manager's (control) cluster, Nodes from target, which may be the
// manager itself.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, target cluster.Cluster, concurrency int) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.Machine{}, ownerindex.ProviderIDIndex, ownerindex.IndexProviderID); err != nil {
		return err
	}
	if err := ownerindex.RegisterClass(ctx, mgr, &v1alpha1.Machine{}); err != nil {
		return err
	}
	if err := target.GetFieldIndexer().IndexField(ctx, &corev1.Node{}, ownerindex.ProviderIDIndex, ownerindex.IndexProviderID); err != nil {
		return err
	}
	r.creates = newCreates(r.Config.MaxConcurrentCreates)
	if err := mgr.Add(r.creates); err != nil {
		return err
	}
	if r.Limits == nil {
		r.Limits = classlimit.New()
	}
	if err := mgr.Add(r.Limits); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(r.receiveEvents)); err != nil {
		return err
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("machine").
		For(&v1alpha1.Machine{}).
		// A class's spec, its creation and its deletion matter to its
		// Machines; its status and finalizer (the class controller's
		// writes) do not, and would wake every Machine of the class.
		Watches(&v1alpha1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.classToMachines),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A health check taking over a Machine's judgement, or giving it back.
		Watches(&v1alpha1.MachineHealthCheck{}, handler.EnqueueRequestsFromMapFunc(r.healthCheckToMachines),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(r.deploymentToMachines), builder.WithPredicates(pauseChanged())).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			handler.TypedEnqueueRequestsFromMapFunc(r.nodeToMachines), nodeChanged())).
		WatchesRawSource(source.Channel(r.creates.wake, &handler.EnqueueRequestForObject{})).
		// A slot of a class given back: the Machines queued for it.
		WatchesRawSource(source.Channel(r.Limits.Wake(), &handler.EnqueueRequestForObject{})).
		WatchesRawSource(r.newHealthSweep()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Build(r)
	if err != nil {
		return err
	}
	// Provider kinds are watched as Machines reference them (contract.go).
	r.contract.ctrl, r.contract.cache = c, mgr.GetCache()
	return nil
}

// deploymentToMachines maps a MachineDeployment to its Machines (by label).
func (r *Reconciler) deploymentToMachines(ctx context.Context, o client.Object) []reconcile.Request {
	machines := &v1alpha1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(o.GetNamespace()),
		client.MatchingLabels{v1alpha1.MachineDeploymentNameLabel: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(machines.Items))
	for i := range machines.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&machines.Items[i])})
	}
	return reqs
}

func (r *Reconciler) classToMachines(ctx context.Context, o client.Object) []reconcile.Request {
	machines := &v1alpha1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(o.GetNamespace()), client.MatchingFields{ownerindex.ClassIndex: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(machines.Items))
	for i := range machines.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&machines.Items[i])})
	}
	return reqs
}

// nodeToMachines maps a Node to its Machine: by the back-reference
// annotations once synced, else by providerID.
func (r *Reconciler) nodeToMachines(ctx context.Context, node *corev1.Node) []reconcile.Request {
	if name, ns := node.Annotations[v1alpha1.NodeMachineAnnotation], node.Annotations[v1alpha1.NodeClusterNamespaceAnnotation]; name != "" && ns != "" {
		if r.Namespace != "" && ns != r.Namespace {
			return nil // another manager's Machine: our cache cannot even look it up
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
	}
	if node.Spec.ProviderID == "" {
		return nil
	}
	machines, err := ownerindex.MachinesWithProviderID(ctx, r.Client, node.Spec.ProviderID, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(machines))
	for i := range machines {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&machines[i])})
	}
	return reqs
}

// nodeChanged passes Node events that matter to a Machine and drops the
// heartbeats that make up most Node updates.
func nodeChanged() predicate.TypedPredicate[*corev1.Node] {
	return predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			return !reflect.DeepEqual(nodeEssence(e.ObjectOld), nodeEssence(e.ObjectNew))
		},
	}
}

type essence struct {
	Labels, Annotations map[string]string
	Taints              []corev1.Taint
	ProviderID          string
	Unschedulable       bool
	KubeletVersion      string
	Conditions          map[corev1.NodeConditionType]corev1.ConditionStatus
	Deleting            bool
}

func nodeEssence(n *corev1.Node) essence {
	// The kubelet version is status.nodeVersion, and what an in-place
	// update waits for.
	e := essence{Labels: n.Labels, Annotations: n.Annotations, Taints: n.Spec.Taints, ProviderID: n.Spec.ProviderID,
		Unschedulable: n.Spec.Unschedulable, KubeletVersion: n.Status.NodeInfo.KubeletVersion,
		Conditions: map[corev1.NodeConditionType]corev1.ConditionStatus{}, Deleting: !n.DeletionTimestamp.IsZero()}
	for _, c := range n.Status.Conditions {
		e.Conditions[c.Type] = c.Status
	}
	return e
}
