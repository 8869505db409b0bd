package machinehealthcheck

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/enqueue"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// SetupWithManager registers the controller: health checks and Machines
// from the manager's (control) cluster, Nodes from target.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, target cluster.Cluster, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinehealthcheck").
		For(&v1alpha1.MachineHealthCheck{}).
		// Another health check's selector coming, changing or going may
		// start or end a conflict over the same Machines.
		Watches(&v1alpha1.MachineHealthCheck{}, handler.EnqueueRequestsFromMapFunc(enqueue.AllInNamespace(r.Client, checkList, true)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Each Machine event, and each of its Node's, is noted for the
		// checks selecting it before it wakes them (judgements.go).
		Watches(&v1alpha1.Machine{}, changed.Handler(&r.judgements, r.machineToChecks, changed.Name),
			builder.WithPredicates(checkedChanged())).
		// A budget's recount may free the disruption a remediation waits
		// for, in any health check of its namespace.
		Watches(&v1alpha1.MachineDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(enqueue.AllInNamespace(r.Client, checkList, false)),
			builder.WithPredicates(disruption.AllowedChanged())).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			changed.Handler(&r.judgements, r.nodeToChecks, nodeMachine), conditionsChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// machineToChecks maps a Machine to the health checks selecting it.
func (r *Reconciler) machineToChecks(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.MachineHealthCheckList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	set := labels.Set(o.GetLabels())
	var reqs []reconcile.Request
	for i := range list.Items {
		if machinefacts.HealthCheckSelects(&list.Items[i], set) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// nodeToChecks maps a Node to the health checks selecting its Machine
// (named by the Node's back-reference annotations).
func (r *Reconciler) nodeToChecks(ctx context.Context, node *corev1.Node) []reconcile.Request {
	name, ns := node.Annotations[v1alpha1.NodeMachineAnnotation], node.Annotations[v1alpha1.NodeClusterNamespaceAnnotation]
	if name == "" || ns == "" {
		return nil
	}
	m := &v1alpha1.Machine{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		return nil // not ours, or not in this manager's namespace
	}
	return r.machineToChecks(ctx, m)
}

// nodeMachine names the Machine a Node stands for (its back-reference
// annotation; nodeToChecks reads the namespace).
func nodeMachine(node *corev1.Node) string { return node.Annotations[v1alpha1.NodeMachineAnnotation] }

// conditionsChanged passes Node events whose condition statuses changed
// (and creations and deletions), not the heartbeats; and those whose
// back-reference to a Machine changed: a condition that changed before
// the Node named its Machine was noted for no Machine.
func conditionsChanged() predicate.TypedPredicate[*corev1.Node] {
	return predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return !reflect.DeepEqual(statuses(o), statuses(n)) || nodeMachine(o) != nodeMachine(n) ||
				o.Annotations[v1alpha1.NodeClusterNamespaceAnnotation] != n.Annotations[v1alpha1.NodeClusterNamespaceAnnotation]
		},
	}
}

func statuses(n *corev1.Node) map[corev1.NodeConditionType]corev1.ConditionStatus {
	out := map[corev1.NodeConditionType]corev1.ConditionStatus{}
	for _, c := range n.Status.Conditions {
		out[c.Type] = c.Status
	}
	return out
}

func checkList() client.ObjectList { return &v1alpha1.MachineHealthCheckList{} }
