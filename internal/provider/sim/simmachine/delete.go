package simmachine

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/finalizer"
	"github.com/millwright-dev/millwright/internal/driverpolicy"
)

// reconcileDelete is the contract's workflow for a deleted InfraMachine
// (docs/contract-providers.md): delete the VM
// through the driver (NotFound is success), then remove the finalizer.
// Without an owner no VM was ever made, as the VM is keyed by the owner.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.sm, infrav1.SimMachineFinalizer) {
		return ctrl.Result{}, nil
	}
	if s.Owner != nil {
		s.SetReady(metav1.ConditionFalse, infrav1.ReadyReasonDeleting, "deleting the VM")
		if ce := r.deleteVM(ctx, s); ce != nil {
			msg := describe(ce.method, ce.err)
			base, maxDelay := r.Config.BackoffBase, r.Config.BackoffCap
			reason := infrav1.ReadyReasonDeleting
			if !ce.outcome.Retryable() {
				// A VM that may still exist is never forgotten: report it and
				// retry slowly until a person fixes the cause.
				base, maxDelay = r.Config.LongBackoffBase, r.Config.LongBackoffCap
				reason = infrav1.ReadyReasonDeletionFailed
			} else if ce.outcome.Action == driverpolicy.RetryLong {
				base, maxDelay = r.Config.LongBackoffBase, r.Config.LongBackoffCap
			}
			after := r.backoff.next(s.sm.UID, base, maxDelay)
			s.SetReady(metav1.ConditionFalse, reason, msg+"; retrying")
			return ctrl.Result{RequeueAfter: after}, nil
		}
		s.SetReady(metav1.ConditionFalse, infrav1.ReadyReasonDeleting, "the VM is deleted")
		s.Log.Info("deleted VM", "providerID", s.sm.Spec.ProviderID)
	}
	r.backoff.reset(s.sm.UID)
	// The status first: once the finalizer is gone, so is the object.
	if err := s.PatchStatus(ctx); err != nil {
		return ctrl.Result{}, err
	}
	_, err := finalizer.Remove(ctx, s.r.Client, infrav1.SimMachineFinalizer, s.sm, s.Patch.Base())
	return ctrl.Result{}, err
}
