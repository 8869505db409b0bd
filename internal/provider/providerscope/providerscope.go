// Package providerscope is the per-reconcile scope the contract providers'
// reconcilers share (the SimMachine's and the TokenBootstrapConfig's): the
// object, its owner Machine, the patch helper writing it, and the Ready
// and Paused conditions every provider object carries.
package providerscope

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
	"github.com/millwright-dev/millwright/internal/patch"
)

// Kind describes a provider kind to the scope: where its conditions and
// failure fields are, and its condition vocabulary.
type Kind[T client.Object] struct {
	// Name names the kind in messages ("SimMachine").
	Name string
	// Conditions returns the object's status.conditions.
	Conditions func(T) *[]metav1.Condition
	// Failure returns the object's status.failureReason and
	// status.failureMessage.
	Failure func(T) (reason, message **string)
	// ReadyCondition and PausedCondition are the condition types the
	// reconciler owns.
	ReadyCondition, PausedCondition string
	// PausedReason and NotPausedReason are the Paused condition's reasons.
	PausedReason, NotPausedReason string
	// FailedReason is the Ready reason of a terminal failure.
	FailedReason string
	// WarningReasons are the Ready reasons announced by a Warning Event
	// (the others by a Normal one).
	WarningReasons []string
}

// Scope is one reconcile's view of a provider object.
type Scope[T client.Object] struct {
	// Log is the reconcile's logger, naming the owner Machine.
	Log logr.Logger
	// Patch writes the object's changes since the reconcile read it; it
	// owns the Ready and Paused conditions only.
	Patch *patch.Helper
	// Owner is the Machine owner reference; nil when there is none.
	Owner *metav1.OwnerReference
	// Machine is the owner Machine; nil when there is no owner or it is
	// not (yet) in the cache.
	Machine *v1alpha1.Machine

	kind     *Kind[T]
	obj      T
	recorder events.EventRecorder
}

// New makes the scope of obj, looking its owner Machine up through c.
// reader (the manager's APIReader) is where a conditions patch reads the
// object; nil means c.
func New[T client.Object](ctx context.Context, kind *Kind[T], c client.Client, reader client.Reader, recorder events.EventRecorder, obj T) (*Scope[T], error) {
	s := &Scope[T]{
		Log:      ctrl.LoggerFrom(ctx),
		Patch:    patch.New(c, obj, patch.WithReader(reader), patch.WithOwnedConditions(kind.ReadyCondition, kind.PausedCondition)),
		kind:     kind,
		obj:      obj,
		recorder: recorder,
	}
	owner, m, err := contract.OwnerMachine(ctx, c, obj)
	if err != nil {
		return nil, err
	}
	s.Owner, s.Machine = owner, m
	if owner != nil {
		s.Log = s.Log.WithValues("machine", owner.Name)
	}
	return s, nil
}

// Paused reports whether the object or its Machine is paused.
func (s *Scope[T]) Paused() bool { return contract.Paused(s.obj, s.Machine) }

// SetPaused sets the Paused condition.
func (s *Scope[T]) SetPaused(paused bool) {
	if paused {
		s.SetCondition(s.kind.PausedCondition, metav1.ConditionTrue, s.kind.PausedReason,
			"the "+v1alpha1.PausedAnnotation+" annotation is set on the "+s.kind.Name+" or its Machine; nothing is reconciled until it is removed")
		return
	}
	s.SetCondition(s.kind.PausedCondition, metav1.ConditionFalse, s.kind.NotPausedReason, "")
}

// SetReady sets the Ready condition; an Event and a log line mark each
// change of its reason, the transitions a person follows.
func (s *Scope[T]) SetReady(status metav1.ConditionStatus, reason, message string) {
	old := meta.FindStatusCondition(*s.kind.Conditions(s.obj), s.kind.ReadyCondition)
	if old == nil || old.Reason != reason || old.Status != status {
		kind := corev1.EventTypeNormal
		if slices.Contains(s.kind.WarningReasons, reason) {
			kind = corev1.EventTypeWarning
		}
		s.Event(kind, reason, message)
		s.Log.Info("ready condition", "status", status, "reason", reason, "message", message)
	}
	s.SetCondition(s.kind.ReadyCondition, status, reason, message)
}

// SetCondition sets a condition; its transition time moves only when its
// status does.
func (s *Scope[T]) SetCondition(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(s.kind.Conditions(s.obj), metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: s.obj.GetGeneration(),
	})
}

// Event emits an Event on the object, related to its Machine.
func (s *Scope[T]) Event(kind, reason, message string) {
	if s.recorder == nil {
		return
	}
	// A nil *Machine in the interface would not be a nil related object:
	// the recorder would dereference it.
	var related runtime.Object
	if s.Machine != nil {
		related = s.Machine
	}
	s.recorder.Eventf(s.obj, related, kind, reason, "Reconcile", "%s", message)
}

// Fail records a terminal failure; the object is not reconciled again
// except for its deletion.
func (s *Scope[T]) Fail(reason, message string) {
	r, m := s.kind.Failure(s.obj)
	*r, *m = &reason, &message
	s.SetReady(metav1.ConditionFalse, s.kind.FailedReason, fmt.Sprintf("%s: %s", reason, message))
}

// PatchStatus writes the status if it changed. An object that is gone (its
// finalizer was just removed) has no status to write.
func (s *Scope[T]) PatchStatus(ctx context.Context) error {
	return client.IgnoreNotFound(s.Patch.PatchStatus(ctx, s.obj))
}
