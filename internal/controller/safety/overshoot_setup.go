package safety

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
)

// setup registers the two overshoot controllers: one for MachineSets, one
// for MachineDeployments. Each checks an object when it changes, soon after
// one of its Machines is created or deleted, and every overshooting period.
func (o *overshoot) setup(ctx context.Context, mgr ctrl.Manager) error {
	if err := ownerindex.Register(ctx, mgr, &v1alpha1.Machine{}, &v1alpha1.MachineSet{}); err != nil {
		return err
	}
	changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
		predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))
	err := ctrl.NewControllerManagedBy(mgr).
		Named("safety-overshoot-machineset").
		For(&v1alpha1.MachineSet{}, changed).
		// The Machine watch keeps the counts (machineCounts) from every
		// event, then enqueues, overshootCoalesce later, the set of a
		// Machine created or deleted. An update (a Machine turning being
		// deleted or preserved) is counted but wakes nothing: the check
		// judges it at its next wake. The deployment's check, woken by
		// its own watch, reads the same counts (an event's counting may
		// land a moment after that wake: the next event, or the periodic
		// count of every Machine, counts it).
		Watches(&v1alpha1.Machine{}, o.counts.sets.Handler(createdOrDeleted(controllerSetName))).
		Complete(reconcile.Func(o.reconcileSet))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("safety-overshoot-machinedeployment").
		For(&v1alpha1.MachineDeployment{}, changed).
		Watches(&v1alpha1.Machine{}, createdOrDeleted(func(m client.Object) string {
			return m.GetLabels()[v1alpha1.MachineDeploymentNameLabel]
		})).
		Complete(reconcile.Func(o.reconcileDeployment))
}

// overshootCoalesce is how soon after a Machine is created or deleted its
// owner is counted: the creates and deletes meanwhile merge into one count
// (the workqueue keeps one waiting entry per owner, at its earliest time).
// Counting at every one listed the owner's Machines once per Machine: at
// 5000 Machines a quarter of the manager's allocations (docs/benchmarks.md).
// A runaway creation is still frozen within a second of going over.
const overshootCoalesce = time.Second

// createdOrDeleted enqueues, overshootCoalesce later, the owner (named by
// name, in the Machine's namespace) of a Machine created or deleted.
func createdOrDeleted(name func(client.Object) string) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(m client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if n := name(m); n != "" {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: n}}, overshootCoalesce)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// controllerSetName is the name of the MachineSet controlling Machine m, "" if none.
func controllerSetName(m client.Object) string {
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.Kind == "MachineSet" {
		return ref.Name
	}
	return ""
}
