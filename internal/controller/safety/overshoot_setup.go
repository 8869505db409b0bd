package safety

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// for MachineDeployments. Each checks an object when it changes, when one
// of its Machines is created or deleted, and every overshooting period.
func (o *overshoot) setup(ctx context.Context, mgr ctrl.Manager) error {
	if err := ownerindex.Register(ctx, mgr, &v1alpha1.Machine{}, &v1alpha1.MachineSet{}); err != nil {
		return err
	}
	changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
		predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))
	createdOrDeleted := builder.WithPredicates(predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("safety-overshoot-machineset").
		For(&v1alpha1.MachineSet{}, changed).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(ownerNamed(controllerSetName)), createdOrDeleted).
		Complete(reconcile.Func(o.reconcileSet))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("safety-overshoot-machinedeployment").
		For(&v1alpha1.MachineDeployment{}, changed).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(ownerNamed(func(m client.Object) string {
			return m.GetLabels()[v1alpha1.MachineDeploymentNameLabel]
		})), createdOrDeleted).
		Complete(reconcile.Func(o.reconcileDeployment))
}

// controllerSetName is the name of the MachineSet controlling Machine m, "" if none.
func controllerSetName(m client.Object) string {
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "MachineSet" {
		return ref.Name
	}
	return ""
}

// ownerNamed maps a Machine to the object name returns, in the Machine's
// namespace (none when name returns "").
func ownerNamed(name func(client.Object) string) handler.MapFunc {
	return func(_ context.Context, m client.Object) []reconcile.Request {
		n := name(m)
		if n == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: n}}}
	}
}
