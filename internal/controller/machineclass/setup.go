package machineclass

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// classIndex indexes Machines by spec.class.name, and MachineSets and
// MachineDeployments by spec.template.spec.class.name, under one name: the
// class each uses.
const classIndex = "machineclass.class-used"

// SetupWithManager registers the controller and its indexes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	idx := mgr.GetFieldIndexer()
	for _, obj := range []client.Object{&v1alpha1.Machine{}, &v1alpha1.MachineSet{}, &v1alpha1.MachineDeployment{}} {
		if err := idx.IndexField(ctx, obj, classIndex, func(o client.Object) []string {
			if c := classOf(o); c != nil {
				return []string{c.Name}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// Only a user coming or going changes a class's count: status writes
	// of its Machines (most of their updates) do not wake the controller.
	// A template's class can change (a rollout): both classes count again.
	toClass := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { enqueueClass(q, e.Object) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				enqueueClass(q, e.ObjectOld)
				enqueueClass(q, e.ObjectNew)
			}
		},
		DeleteFunc:  func(_ context.Context, e event.DeleteEvent, q queue) { enqueueClass(q, e.Object) },
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { enqueueClass(q, e.Object) },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machineclass").
		For(&v1alpha1.MachineClass{}).
		Watches(&v1alpha1.Machine{}, toClass).
		Watches(&v1alpha1.MachineSet{}, toClass).
		Watches(&v1alpha1.MachineDeployment{}, toClass).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// enqueueClass enqueues the class o uses, if any.
func enqueueClass(q queue, o client.Object) {
	if ref := classOf(o); ref != nil {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}})
	}
}

// classOf is the class a Machine, MachineSet or MachineDeployment uses.
func classOf(o client.Object) *v1alpha1.MachineClassReference {
	switch o := o.(type) {
	case *v1alpha1.Machine:
		return o.Spec.Class
	case *v1alpha1.MachineSet:
		return o.Spec.Template.Spec.Class
	case *v1alpha1.MachineDeployment:
		return o.Spec.Template.Spec.Class
	}
	return nil
}
