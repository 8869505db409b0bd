package machineset

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	// Machines by controller: a reconcile lists its own Machines and the
	// orphans it may adopt, not every Machine of the namespace.
	if err := ownerindex.Register(ctx, mgr, &v1alpha1.Machine{}); err != nil {
		return err
	}
	r.zoneCounts = newZoneCounts()
	return ctrl.NewControllerManagedBy(mgr).
		Named("machineset").
		For(&v1alpha1.MachineSet{}).
		// Each Machine event is noted for its sets' ledgers before it
		// wakes them (collect).
		Watches(&v1alpha1.Machine{}, changed.Handler(&r.ledgers, r.machineToSets, changed.Name)).
		// The siblings' Machines by zone, for placement (zonecounts.go).
		Watches(&v1alpha1.Machine{}, r.zoneCounts.Handler(nil)).
		// A budget's recount may free the deletion a scale-down waits for.
		Watches(&v1alpha1.MachineDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(r.budgetToSets),
			builder.WithPredicates(disruption.AllowedChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// machineToSets maps a Machine to its controller MachineSet, or, for an
// orphan, to every MachineSet whose selector matches it (to adopt it).
func (r *Reconciler) machineToSets(ctx context.Context, o client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		if ref.Kind != "MachineSet" || ref.APIVersion != v1alpha1.GroupVersion.String() {
			return nil
		}
		reqs := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
		// The set it is updated into in place counts it too (inplace.go).
		for _, target := range inPlaceTargets(o) {
			if target != ref.Name {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: target}})
			}
		}
		return reqs
	}
	sets := &v1alpha1.MachineSetList{}
	// Read only: the cache's objects, not copies.
	if err := r.Client.List(ctx, sets, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, ms := range sets.Items {
		sel, err := ms.Spec.Selector.AsSelector()
		if err == nil && sel.Matches(labels.Set(o.GetLabels())) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ms)})
		}
	}
	return reqs
}

// inPlaceTargets names the sets a Machine is being updated into in place:
// its target annotation and its update status's target.
func inPlaceTargets(o client.Object) []string {
	var out []string
	if t := o.GetAnnotations()[v1alpha1.InPlaceTargetAnnotation]; t != "" {
		out = append(out, t)
	}
	if m, ok := o.(*v1alpha1.Machine); ok && m.Status.InPlaceUpdate != nil && m.Status.InPlaceUpdate.TargetSet != "" {
		out = append(out, m.Status.InPlaceUpdate.TargetSet)
	}
	return out
}

// budgetToSets maps a MachineDisruptionBudget to the sets of its namespace
// with more Machines than replicas: those that may have a deletion
// waiting for it.
func (r *Reconciler) budgetToSets(ctx context.Context, o client.Object) []reconcile.Request {
	sets := &v1alpha1.MachineSetList{}
	if err := r.Client.List(ctx, sets, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range sets.Items {
		if ms := &sets.Items[i]; ms.Status.Replicas > ms.Spec.Replicas {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ms)})
		}
	}
	return reqs
}
