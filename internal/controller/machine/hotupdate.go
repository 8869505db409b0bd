package machine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func providerSpecHash(class *v1alpha1.MachineClass) string {
	sum := sha256.Sum256(class.Spec.ProviderSpec.Raw)
	return hex.EncodeToString(sum[:8])
}

// hotUpdate applies a changed class providerSpec to the Machine's existing
// VM through UpdateMachine (seed 003 "Hotupdate Instances"). The hash of the
// last applied spec is kept in an annotation; a Machine created from the
// current spec just records it.
func (r *Reconciler) hotUpdate(ctx context.Context, s *scope, d *driverInfra) (reconcile.Result, error) {
	m := s.machine
	want := providerSpecHash(d.class)
	have, recorded := m.Annotations[v1alpha1.LastAppliedProviderSpecHashAnnotation]
	if have == want {
		return reconcile.Result{}, nil
	}
	if !recorded {
		// Provisioned from an unknown spec (the hash is recorded when the VM
		// is provisioned, so this is a Machine from before that): adopt it.
		return reconcile.Result{}, r.recordAppliedSpec(ctx, s, want)
	}
	if m.Status.LastOperation.Type == v1alpha1.OperationUpdate {
		if wait := r.retryWait(s); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	secret, err := r.classSecret(ctx, d.class)
	if err != nil {
		return reconcile.Result{}, err
	}
	err = d.call(ctx, driver.MethodUpdateMachine, func(ctx context.Context) error {
		_, err := d.drv.UpdateMachine(ctx, &driver.UpdateMachineRequest{
			Machine: m, ProviderID: m.Spec.ProviderID, MachineClass: d.class, Secret: secret,
		})
		return err
	})
	switch driver.ClassifyError(driver.MethodUpdateMachine, err).Action {
	case driver.Continue:
		s.operation(v1alpha1.OperationUpdate, v1alpha1.OperationSucceeded, "", "applied the changed providerSpec of MachineClass "+d.class.Name+" in place")
	case driver.SkipStep:
		s.log.Info("hot update skipped", "reason", driver.MessageOf(err))
	default:
		return r.failed(s, v1alpha1.OperationUpdate, driver.MethodUpdateMachine, err), nil
	}
	return reconcile.Result{}, r.recordAppliedSpec(ctx, s, want)
}

func (r *Reconciler) recordAppliedSpec(ctx context.Context, s *scope, hash string) error {
	if s.machine.Annotations == nil {
		s.machine.Annotations = map[string]string{}
	}
	s.machine.Annotations[v1alpha1.LastAppliedProviderSpecHashAnnotation] = hash
	return s.patchObject(ctx)
}
