package simmachine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/internal/driverpolicy"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// handleCallError turns a failed driver call during provisioning into the
// SimMachine's status and the next requeue, as the driver's recovery
// table says: retryable codes back off exponentially, terminal ones set
// failureReason and failureMessage for good.
func (r *Reconciler) handleCallError(s *scope, ce *callError) (ctrl.Result, error) {
	msg := describe(ce.method, ce.err)
	switch ce.outcome.Action {
	case driverpolicy.Retry, driverpolicy.RetryLong, driverpolicy.CollectOrphans:
		base, maxDelay := r.Config.BackoffBase, r.Config.BackoffCap
		if ce.outcome.Action == driverpolicy.RetryLong {
			base, maxDelay = r.Config.LongBackoffBase, r.Config.LongBackoffCap
		}
		after := r.backoff.next(s.sm.UID, base, maxDelay)
		s.Log.Info("driver call failed; retrying", "method", ce.method, "code", driver.CodeOf(ce.err).String(), "after", after, "error", driver.MessageOf(ce.err))
		// Once provisioned, a passing hiccup (an outage) does not undo
		// Ready: the VM is still there as far as anyone knows.
		if !s.sm.Status.Ready {
			s.SetReady(metav1.ConditionFalse, infrav1.ReadyReasonProvisioning, msg+"; retrying")
		}
		return ctrl.Result{RequeueAfter: after}, nil
	}
	reason := ce.failureReason
	if reason == "" {
		reason = infrav1.FailureReasonCreateError
		if driver.CodeOf(ce.err) == driver.InvalidArgument {
			reason = infrav1.FailureReasonInvalidConfiguration
		}
	}
	if ce.outcome.Recovery != "" {
		msg += " (" + ce.outcome.Recovery + ")"
	}
	s.Fail(reason, msg)
	r.backoff.reset(s.sm.UID)
	return ctrl.Result{}, nil
}
