package simmachine

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
	"github.com/millwright-dev/millwright/internal/controller/patch"
)

// scope is one reconcile's view: the SimMachine as read (orig) and as it
// is being changed (sm), and its owner Machine.
type scope struct {
	r   *Reconciler
	log logr.Logger
	sm  *infrav1.SimMachine
	// patch writes the changes to sm since the reconcile read it.
	patch *patch.Helper
	// owner is the Machine owner reference; nil when there is none.
	owner *metav1.OwnerReference
	// machine is the owner Machine; nil when there is no owner or it is
	// not (yet) in the cache.
	machine *v1alpha1.Machine
}

func (r *Reconciler) newScope(ctx context.Context, sm *infrav1.SimMachine) (*scope, error) {
	s := &scope{r: r, sm: sm, patch: patch.New(r.Client, sm, patch.WithReader(r.APIReader),
		patch.WithOwnedConditions(infrav1.ReadyCondition, infrav1.PausedCondition)), log: ctrl.LoggerFrom(ctx)}
	owner, m, err := contract.OwnerMachine(ctx, r.Client, sm)
	if err != nil {
		return nil, err
	}
	s.owner, s.machine = owner, m
	if owner != nil {
		s.log = s.log.WithValues("machine", owner.Name)
	}
	return s, nil
}

func (s *scope) paused() bool { return contract.Paused(s.sm, s.machine) }

func (s *scope) setPaused(paused bool) {
	if paused {
		s.setCondition(infrav1.PausedCondition, metav1.ConditionTrue, infrav1.PausedReasonPaused,
			"the "+v1alpha1.PausedAnnotation+" annotation is set on the SimMachine or its Machine; nothing is reconciled until it is removed")
		return
	}
	s.setCondition(infrav1.PausedCondition, metav1.ConditionFalse, infrav1.PausedReasonNotPaused, "")
}

// setReady sets the Ready condition; an Event and a log line mark each
// change of its reason, the transitions a person follows.
func (s *scope) setReady(status metav1.ConditionStatus, reason, message string) {
	old := meta.FindStatusCondition(s.sm.Status.Conditions, infrav1.ReadyCondition)
	if old == nil || old.Reason != reason || old.Status != status {
		kind := corev1.EventTypeNormal
		if reason == infrav1.ReadyReasonFailed || reason == infrav1.ReadyReasonDeletionFailed {
			kind = corev1.EventTypeWarning
		}
		s.event(kind, reason, message)
		s.log.Info("ready condition", "status", status, "reason", reason, "message", message)
	}
	s.setCondition(infrav1.ReadyCondition, status, reason, message)
}

func (s *scope) setCondition(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.sm.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: s.sm.Generation,
	})
}

func (s *scope) event(kind, reason, message string) {
	if s.r.Recorder == nil {
		return
	}
	// A nil *Machine in the interface would not be a nil related object:
	// the recorder would dereference it.
	var related runtime.Object
	if s.machine != nil {
		related = s.machine
	}
	s.r.Recorder.Eventf(s.sm, related, kind, reason, "Reconcile", "%s", message)
}

// fail records a terminal failure; the SimMachine is not reconciled again
// except for its deletion.
func (s *scope) fail(reason, message string) {
	s.sm.Status.FailureReason = &reason
	s.sm.Status.FailureMessage = &message
	s.setReady(metav1.ConditionFalse, infrav1.ReadyReasonFailed, fmt.Sprintf("%s: %s", reason, message))
}

// patchMeta applies mutate to the metadata or spec and patches them at
// once, keeping the status to be written at the end.
func (s *scope) patchMeta(ctx context.Context, mutate func(*infrav1.SimMachine)) error {
	mutate(s.sm)
	return s.patch.PatchObject(ctx, s.sm)
}

// patchStatus writes the status if it changed. An object that is gone
// (its finalizer was just removed) has no status to write.
func (s *scope) patchStatus(ctx context.Context) error {
	return client.IgnoreNotFound(s.patch.PatchStatus(ctx, s.sm))
}
