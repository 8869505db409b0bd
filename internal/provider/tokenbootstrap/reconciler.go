package tokenbootstrap

import (
	"context"
	"errors"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
)

// Kind is the kind of the configs this controller reconciles, as a
// Machine's spec.bootstrap.configRef names it.
const Kind = "TokenBootstrapConfig"

// Reconciler reconciles TokenBootstrapConfigs into bootstrap tokens and
// user-data Secrets.
type Reconciler struct {
	// Client reads (from the cache) and patches configs and Machines, and
	// creates and deletes user-data Secrets (writes are never cached).
	Client client.Client
	// APIReader reads user-data Secrets directly: the controller may not
	// list or watch Secrets, so they are not cached.
	APIReader client.Reader
	// Target reaches the cluster the Nodes join, without a cache: the
	// bootstrap token Secrets live in its kube-system.
	Target client.Client
	// Defaults fill what a config's spec leaves unset.
	Defaults Defaults
	// Recorder, when set, receives an Event per transition a user cares about.
	Recorder events.EventRecorder
}

// SetupWithManager registers the controller with mgr, running up to
// workers reconciles at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tokenbootstrapconfig").
		// Status-only updates are our own patches; spec, annotation
		// (paused), owner and deletion changes are worth a reconcile.
		For(&bootstrapv1.TokenBootstrapConfig{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, metadataChanged()))).
		// The owner Machine brings the nodeRef (join: delete the token), its
		// failure (delete the token too) and may be paused; its other
		// changes (phase, conditions) are not ours.
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(machineToConfig),
			builder.WithPredicates(machineChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// metadataChanged passes the updates that set deletionTimestamp (which
// does not always change the generation) or change the owner references
// (the Machine controller adopting the config).
func metadataChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
			!apiequality.Semantic.DeepEqual(e.ObjectOld.GetOwnerReferences(), e.ObjectNew.GetOwnerReferences())
	}}
}

// machineChanged passes the Machine updates this controller acts on: a
// nodeRef appearing or going, a failure (the token is deleted), annotations
// (paused), and configRef changes.
func machineChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.Machine)
		n, ok2 := e.ObjectNew.(*v1alpha1.Machine)
		if !ok1 || !ok2 {
			return true
		}
		return (o.Status.NodeRef == nil) != (n.Status.NodeRef == nil) ||
			(o.Status.FailureReason == "") != (n.Status.FailureReason == "") ||
			!apiequality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
			!apiequality.Semantic.DeepEqual(o.Spec.Bootstrap.ConfigRef, n.Spec.Bootstrap.ConfigRef)
	}}
}

// machineToConfig maps a Machine to the TokenBootstrapConfig its
// spec.bootstrap.configRef names, if any.
func machineToConfig(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*v1alpha1.Machine)
	if !ok || m.Spec.Bootstrap.ConfigRef == nil {
		return nil
	}
	ref := m.Spec.Bootstrap.ConfigRef
	if ref.APIGroup != bootstrapv1.GroupName || ref.Kind != Kind {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}}}
}

// Reconcile reads the config and its owner into a scope, runs the pause
// check and the normal or deletion flow, and patches the status once at
// the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cfg := &bootstrapv1.TokenBootstrapConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s, err := r.newScope(ctx, cfg)
	if err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.reconcile(ctx, s)
	if perr := s.PatchStatus(ctx); perr != nil {
		err = errors.Join(err, perr)
	}
	return requeue.Result(res, err)
}

func (r *Reconciler) reconcile(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.Paused() {
		// Pausing stops everything, deletion included, until the annotation
		// is removed; only the Paused condition says so. A token is not
		// extended while paused: a paused Machine is not expected to boot.
		s.SetPaused(true)
		s.Log.V(1).Info("paused")
		return ctrl.Result{}, nil
	}
	s.SetPaused(false)
	if !s.cfg.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}
