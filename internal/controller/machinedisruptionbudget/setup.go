package machinedisruptionbudget

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// SetupWithManager registers the controller: budgets and Machines from the
// manager's (control) cluster.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinedisruptionbudget").
		For(&v1alpha1.MachineDisruptionBudget{}).
		// Another budget's selector coming, changing or going changes the
		// Overlapping condition of the budgets sharing its Machines.
		Watches(&v1alpha1.MachineDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(r.allInNamespace),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A Machine's labels (selection) and status (availability) change
		// its budgets' counts; both old and new labels are mapped, so that
		// a Machine leaving a budget is uncounted there.
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.machineToBudgets)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

func (r *Reconciler) allInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.MachineDisruptionBudgetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Name != o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// machineToBudgets maps a Machine to the budgets selecting it, and to
// those with a grant for it (a Machine whose labels changed since).
func (r *Reconciler) machineToBudgets(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.MachineDisruptionBudgetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	set := labels.Set(o.GetLabels())
	var reqs []reconcile.Request
	for i := range list.Items {
		b := &list.Items[i]
		sel, err := b.Spec.Selector.AsSelector()
		if err == nil && sel.Matches(set) || granted(b, o.GetName()) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)})
		}
	}
	return reqs
}

func granted(b *v1alpha1.MachineDisruptionBudget, name string) bool {
	for _, d := range b.Status.DisruptedMachines {
		if d.Name == name {
			return true
		}
	}
	return false
}
