package simmachine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/finalizer"
)

// bootstrapDataKey is the key of the bootstrap data in the Secret that a
// Machine's spec.bootstrap.dataSecretName names.
const bootstrapDataKey = "value"

// reconcileNormal is the contract's workflow for a live InfraMachine
// (docs/contract-providers.md); the numbers are its steps as the Cluster
// API contract numbers them (3 and 5 are about a Cluster, which Millwright
// has not).
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	// 1. Without a Machine owner there is nothing to make a VM for: the
	// Machine controller sets the owner from its spec.infrastructureRef.
	if s.Owner == nil {
		s.Log.V(1).Info("no Machine owner yet")
		return ctrl.Result{}, nil
	}
	// 2. A terminal failure is final; only deletion is handled from now on.
	if s.sm.Status.FailureReason != nil || s.sm.Status.FailureMessage != nil {
		return ctrl.Result{}, nil
	}
	// 4. The finalizer, before any VM can exist.
	if _, err := finalizer.Add(ctx, s.r.Client, infrav1.SimMachineFinalizer, s.sm, s.Patch.Base()); err != nil {
		return ctrl.Result{}, err
	}
	// 6. The bootstrap data must exist before the VM can boot with it.
	userData, waiting, err := r.bootstrapData(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting != "" {
		s.SetReady(metav1.ConditionFalse, infrav1.ReadyReasonWaitingForBootstrapData, waiting)
		if s.Machine == nil || s.Machine.Spec.Bootstrap.DataSecretName == nil {
			return ctrl.Result{}, nil // the Machine watch brings us back
		}
		// Secrets are not watched: poll for this one.
		return ctrl.Result{RequeueAfter: r.backoff.next(s.sm.UID, r.Config.BackoffBase, r.Config.BackoffCap)}, nil
	}

	// 7. The VM.
	vm, ce := r.ensureVM(ctx, s, userData)
	if ce != nil {
		return r.handleCallError(s, ce)
	}
	r.backoff.reset(s.sm.UID)
	// 8 and 11: providerID and the zone the VM runs in, on the spec, before
	// status.ready says the Machine controller may copy them.
	if ptr.Deref(s.sm.Spec.ProviderID, "") != vm.providerID || (s.sm.Spec.FailureDomain == nil && vm.zone != "") {
		if err := s.patchMeta(ctx, func(sm *infrav1.SimMachine) {
			sm.Spec.ProviderID = ptr.To(vm.providerID)
			if sm.Spec.FailureDomain == nil && vm.zone != "" {
				sm.Spec.FailureDomain = ptr.To(vm.zone)
			}
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	// 9 and 10; 12 is the status patch in Reconcile.
	s.sm.Status.Ready = true
	s.sm.Status.Initialization = &infrav1.SimMachineInitializationStatus{Provisioned: true}
	if vm.addresses != nil {
		s.sm.Status.Addresses = vm.addresses
	}
	s.SetReady(metav1.ConditionTrue, infrav1.ReadyReasonProvisioned, "VM "+vm.providerID+" is provisioned")
	return ctrl.Result{}, nil
}

// bootstrapData returns the owner Machine's bootstrap data, or why it is
// not available yet.
func (r *Reconciler) bootstrapData(ctx context.Context, s *scope) (data []byte, waiting string, err error) {
	if s.Machine == nil {
		return nil, "waiting for Machine " + s.Owner.Name + " to be readable", nil
	}
	name := s.Machine.Spec.Bootstrap.DataSecretName
	if name == nil {
		return nil, "waiting for Machine " + s.Machine.Name + " to have spec.bootstrap.dataSecretName", nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.sm.Namespace, Name: *name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "bootstrap data Secret " + *name + " not found", nil
		}
		return nil, "", err
	}
	v, ok := secret.Data[bootstrapDataKey]
	if !ok {
		return nil, fmt.Sprintf("bootstrap data Secret %s has no key %q", *name, bootstrapDataKey), nil
	}
	return v, "", nil
}
