package machinedeployment

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	// Machines by controller to count a set's Machines; MachineSets by
	// controller to list the deployment's own sets and the orphans it may
	// adopt, not every set of the namespace.
	if err := ownerindex.Register(ctx, mgr, &v1alpha1.Machine{}, &v1alpha1.MachineSet{}); err != nil {
		return err
	}
	r.tallies = newTallies()
	if err := ownerindex.RegisterClass(ctx, mgr, &v1alpha1.MachineDeployment{}, &v1alpha1.MachineSet{}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinedeployment").
		// Only what people and other controllers change: our own status
		// writes do not wake us, the progress deadline is a timed requeue.
		For(&v1alpha1.MachineDeployment{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1alpha1.MachineSet{}, handler.EnqueueRequestsFromMapFunc(r.setToDeployments)).
		// Every Machine event is counted (tallies); those that may change
		// a decision wake the deployment, after they are counted.
		Watches(&v1alpha1.Machine{}, tallyHandler{tallies: r.tallies, next: handler.EnqueueRequestsFromMapFunc(r.machineToDeployment), pass: machineCounted()}).
		// A budget's recount may free an in-place start that waits for it.
		Watches(&v1alpha1.MachineDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(r.budgetToDeployments),
			builder.WithPredicates(disruption.AllowedChanged())).
		Watches(&v1alpha1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.classToDeployments),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// setToDeployments maps a MachineSet to its controller deployment, or, for
// an orphan, to every deployment whose selector matches it (to adopt it).
func (r *Reconciler) setToDeployments(ctx context.Context, o client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		if ref.Kind != "MachineDeployment" || ref.APIVersion != v1alpha1.GroupVersion.String() {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
	}
	mds := &v1alpha1.MachineDeploymentList{}
	// Read only: the cache's objects, not copies.
	if err := r.Client.List(ctx, mds, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, md := range mds.Items {
		sel, err := md.Spec.Selector.AsSelector()
		if err == nil && sel.Matches(labels.Set(o.GetLabels())) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&md)})
		}
	}
	return reqs
}

// machineToDeployment maps a Machine to the deployment of its MachineSet,
// which counts its Machines itself (package plan): one becoming available
// or going away moves the rollout without waiting for the set's status.
func (r *Reconciler) machineToDeployment(ctx context.Context, o client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == "MachineSet" {
		ms := &v1alpha1.MachineSet{}
		// Read only, and on every Machine event: the cache's object, not a
		// deep copy of the set's template at each one.
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}, ms, client.UnsafeDisableDeepCopy); err == nil {
			return r.setToDeployments(ctx, ms)
		}
	}
	if md := o.GetLabels()[v1alpha1.MachineDeploymentNameLabel]; md != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: md}}}
	}
	return nil
}

// machineCounted passes the Machine events that change a count: creation,
// deletion starting or ending, a change of owner, of the Ready condition
// (its status or transition time, from which availability runs), of the
// failureReason, or of what a placed Machine says of its zone's capacity
// (zoneEvidenceChanged). The instant a Ready Machine passes minReadySeconds is a
// timed requeue (rollout), not an event.
func machineCounted() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
				!equalOwner(metav1.GetControllerOfNoCopy(e.ObjectOld), metav1.GetControllerOfNoCopy(e.ObjectNew)) {
				return true
			}
			old, okOld := e.ObjectOld.(*v1alpha1.Machine)
			cur, okNew := e.ObjectNew.(*v1alpha1.Machine)
			if !okOld || !okNew {
				return true
			}
			return old.Status.FailureReason != cur.Status.FailureReason ||
				readySince(old) != readySince(cur) || inPlaceChanged(old, cur) || zoneEvidenceChanged(old, cur)
		},
	}
}

// inPlaceChanged reports a change an in-place update acts on: its target
// or delete annotation, its update's phase, its selection label.
func inPlaceChanged(old, cur *v1alpha1.Machine) bool {
	for _, k := range []string{v1alpha1.InPlaceTargetAnnotation, v1alpha1.DeleteMachineAnnotation} {
		if old.Annotations[k] != cur.Annotations[k] {
			return true
		}
	}
	return inPlacePhase(old) != inPlacePhase(cur) ||
		old.Labels[v1alpha1.UpdateSelectedLabel] != cur.Labels[v1alpha1.UpdateSelectedLabel]
}

func inPlacePhase(m *v1alpha1.Machine) string {
	if u := m.Status.InPlaceUpdate; u != nil {
		return u.TargetSet + "/" + string(u.Phase)
	}
	return ""
}

// readySince is when the Machine became Ready; zero when it is not.
func readySince(m *v1alpha1.Machine) time.Time {
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

func equalOwner(a, b *metav1.OwnerReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.UID == b.UID
}

// classToDeployments maps a MachineClass to the deployments whose template,
// or one of whose sets' templates, names it: their capacity annotations.
func (r *Reconciler) classToDeployments(ctx context.Context, o client.Object) []reconcile.Request {
	seen := map[types.NamespacedName]bool{}
	var reqs []reconcile.Request
	add := func(key types.NamespacedName) {
		if !seen[key] {
			seen[key] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	// Read only: the cache's objects, not copies.
	mds := &v1alpha1.MachineDeploymentList{}
	if err := r.Client.List(ctx, mds, client.InNamespace(o.GetNamespace()), client.MatchingFields{ownerindex.ClassIndex: o.GetName()},
		client.UnsafeDisableDeepCopy); err == nil {
		for _, md := range mds.Items {
			add(client.ObjectKeyFromObject(&md))
		}
	}
	sets := &v1alpha1.MachineSetList{}
	if err := r.Client.List(ctx, sets, client.InNamespace(o.GetNamespace()), client.MatchingFields{ownerindex.ClassIndex: o.GetName()},
		client.UnsafeDisableDeepCopy); err == nil {
		for _, ms := range sets.Items {
			for _, req := range r.setToDeployments(ctx, &ms) {
				add(req.NamespacedName)
			}
		}
	}
	return reqs
}

// budgetToDeployments maps a MachineDisruptionBudget to the InPlace
// deployments of its namespace: those that may have a start waiting for it
// (the MachineSet controller asks for rollout deletions, and watches
// budgets itself).
func (r *Reconciler) budgetToDeployments(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.MachineDeploymentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if md := &list.Items[i]; md.Spec.Strategy.Type == v1alpha1.InPlaceStrategy {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(md)})
		}
	}
	return reqs
}
