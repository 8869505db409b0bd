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
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/enqueue"
)

// SetupWithManager registers the controller: budgets and Machines from the
// manager's (control) cluster.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinedisruptionbudget").
		For(&v1alpha1.MachineDisruptionBudget{}).
		// Another budget's selector coming, changing or going changes the
		// Overlapping condition of the budgets sharing its Machines.
		Watches(&v1alpha1.MachineDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(enqueue.AllInNamespace(r.Client, budgetList, true)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// An owner's size is what its Machines count against
		// (docs/disruption-budgets.md): a change recounts the namespace's
		// budgets.
		Watches(&v1alpha1.MachineSet{}, handler.EnqueueRequestsFromMapFunc(enqueue.AllInNamespace(r.Client, budgetList, false)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(enqueue.AllInNamespace(r.Client, budgetList, false)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A Machine's labels (selection) and status (availability) change
		// its budgets' counts, and only what a budget reads wakes them
		// (countedChanged); both old and new labels are mapped, so that
		// a Machine leaving a budget is uncounted there. The watch notes
		// the Machine for the budgets' tallies before it wakes them.
		Watches(&v1alpha1.Machine{}, changed.Handler(&r.tallies, r.machineToBudgets, changed.Name),
			builder.WithPredicates(countedChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// machineToBudgets maps a Machine to the budgets selecting it, and to
// those with a grant for it (a Machine whose labels changed since). The
// namespace's other budgets are not woken, but the Machine is noted for
// their tallies: one they do not select still decides whether its set's
// selected Machines count against their owner's size (an owner selected
// in part counts alone), and their next reconcile puts it.
func (r *Reconciler) machineToBudgets(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.MachineDisruptionBudgetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	set := labels.Set(o.GetLabels())
	var reqs []reconcile.Request
	for i := range list.Items {
		b := &list.Items[i]
		key := client.ObjectKeyFromObject(b)
		sel, err := b.Spec.Selector.AsSelector()
		switch {
		case err == nil && sel.Matches(set) || granted(b, o.GetName()):
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		case err == nil && b.DeletionTimestamp.IsZero():
			// Not for a budget whose selector does not parse or that is
			// going: neither keeps a tally, and the names would pile up.
			r.tallies.Note(key, o.GetName())
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

func budgetList() client.ObjectList { return &v1alpha1.MachineDisruptionBudgetList{} }
