package safety

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
)

// setup registers the stale Node check: a Node is looked at when it is
// created, when its providerID or annotations change, and when a Machine
// that may own it appears, changes or goes. It relies on the machine
// controller's ownerindex.ProviderIDIndex on Machines and on Nodes.
func (s *staleNodes) setup(mgr ctrl.Manager, target cluster.Cluster) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("safety-stale-nodes").
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			&handler.TypedEnqueueRequestForObject[*corev1.Node]{}, ownershipChanged())).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(s.machineToNodes),
			builder.WithPredicates(predicate.Funcs{GenericFunc: func(event.GenericEvent) bool { return false }})).
		Complete(s)
}

// ownershipChanged drops Node updates that cannot change who owns the
// Node: the status heartbeats that make up most of them.
func ownershipChanged() predicate.TypedPredicate[*corev1.Node] {
	return predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.Spec.ProviderID != n.Spec.ProviderID ||
				o.Annotations[v1alpha1.NodeNotManagedAnnotation] != n.Annotations[v1alpha1.NodeNotManagedAnnotation] ||
				o.Annotations[v1alpha1.NodeMachineAnnotation] != n.Annotations[v1alpha1.NodeMachineAnnotation] ||
				o.Annotations[v1alpha1.NodeClusterNamespaceAnnotation] != n.Annotations[v1alpha1.NodeClusterNamespaceAnnotation]
		},
	}
}

// machineToNodes maps a Machine to the Nodes it may own: its recorded Node
// and the Nodes with its providerID.
func (s *staleNodes) machineToNodes(ctx context.Context, o client.Object) []reconcile.Request {
	m := o.(*v1alpha1.Machine)
	var reqs []reconcile.Request
	if m.Status.NodeRef != nil {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: m.Status.NodeRef.Name}})
	}
	if m.Spec.ProviderID == "" {
		return reqs
	}
	nodes, err := ownerindex.NodesWithProviderID(ctx, s.nodes, m.Spec.ProviderID)
	if err != nil {
		return reqs
	}
	for _, n := range nodes {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
	}
	return reqs
}
