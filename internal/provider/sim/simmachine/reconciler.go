package simmachine

import (
	"context"
	"errors"
	"time"

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

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// Config tunes the controller's retries.
type Config struct {
	// BackoffBase and BackoffCap bound the delay after a retryable driver
	// error (Unavailable, Aborted, ...).
	BackoffBase, BackoffCap time.Duration
	// LongBackoffBase and LongBackoffCap bound it after exhausted capacity
	// (ResourceExhausted) and after a terminal error during deletion,
	// which are not fixed quickly.
	LongBackoffBase, LongBackoffCap time.Duration
	// CallTimeout bounds each driver call.
	CallTimeout time.Duration
}

// DefaultConfig returns production retry settings.
func DefaultConfig() Config {
	return Config{
		BackoffBase: time.Second, BackoffCap: 5 * time.Minute,
		LongBackoffBase: 30 * time.Second, LongBackoffCap: 15 * time.Minute,
		CallTimeout: 30 * time.Second,
	}
}

// Reconciler reconciles SimMachines into VMs of the sim.
type Reconciler struct {
	// Client reads (from the cache) and patches SimMachines and Machines.
	Client client.Client
	// APIReader reads bootstrap Secrets directly: the controller may only
	// get Secrets, never list or watch them, so they are not cached.
	APIReader client.Reader
	// Driver makes the VMs: the sim (sim.New), in process.
	Driver driver.Driver
	// Recorder, when set, receives an Event per transition a user cares about.
	Recorder events.EventRecorder
	// Config tunes retries; the zero value means DefaultConfig.
	Config Config

	backoff *backoff
}

// SetupWithManager registers the controller with mgr, running up to
// workers reconciles at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Config == (Config{}) {
		r.Config = DefaultConfig()
	}
	r.backoff = newBackoff()
	return ctrl.NewControllerManagedBy(mgr).
		Named("simmachine").
		// Status-only updates (our own patches) are not worth a driver
		// call each; spec, annotation (paused), owner and deletion changes are.
		For(&infrav1.SimMachine{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, metadataChanged()))).
		// The owner Machine brings the bootstrap data and may be paused.
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(machineToSimMachine)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// metadataChanged passes the updates that set deletionTimestamp (which
// does not always change the generation) or change the owner references
// (the Machine controller adopting the SimMachine).
func metadataChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
			!apiequality.Semantic.DeepEqual(e.ObjectOld.GetOwnerReferences(), e.ObjectNew.GetOwnerReferences())
	}}
}

// machineToSimMachine maps a Machine to the SimMachine its
// spec.infrastructureRef names, if any.
func machineToSimMachine(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*v1alpha1.Machine)
	if !ok || m.Spec.InfrastructureRef == nil {
		return nil
	}
	ref := m.Spec.InfrastructureRef
	if ref.APIGroup != infrav1.GroupName || ref.Kind != "SimMachine" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}}}
}

// Reconcile reads the SimMachine and its owner into a scope, runs the
// pause check and the normal or deletion flow, and patches the status
// once at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sm := &infrav1.SimMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, sm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s, err := r.newScope(ctx, sm)
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
		// is removed; only the Paused condition says so.
		s.SetPaused(true)
		s.Log.V(1).Info("paused")
		return ctrl.Result{}, nil
	}
	s.SetPaused(false)
	if !s.sm.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}
