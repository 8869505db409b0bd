package machine

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
)

// bootstrapConfig follows spec.bootstrap.configRef (docs/contract-providers.md): it owns the
// bootstrap provider's config object and, once the object reports its
// data Secret (status.dataSecretName with status.ready or
// status.initialization.dataSecretCreated), copies the Secret's name to
// spec.bootstrap.dataSecretName, which is all the rest of the controller
// reads. Until then the Machine is Pending; the infrastructure steps still
// run (they adopt the InfraMachine, and wait for the data themselves).
func (r *Reconciler) bootstrapConfig(ctx context.Context, s *scope) (reconcile.Result, error) {
	b := &s.machine.Spec.Bootstrap
	contractMachine := s.machine.Spec.InfrastructureRef != nil
	switch {
	case b.DataSecretName != nil:
		if contractMachine { // a driver Machine says so when it reads the Secret
			s.setCondition(v1alpha1.BootstrapReadyCondition, metav1.ConditionTrue, ReasonBootstrapDataReady,
				"bootstrap data is in Secret "+*b.DataSecretName)
		}
		return reconcile.Result{}, nil
	case b.ConfigRef == nil:
		if contractMachine {
			r.missing(s, v1alpha1.BootstrapReadyCondition, ReasonBootstrapDataMissing,
				"spec.bootstrap has neither configRef nor dataSecretName: the InfraMachine's provider has no bootstrap data to boot with")
		}
		return reconcile.Result{}, nil
	}
	ref := b.ConfigRef
	obj, err := r.external(ctx, s, ref)
	if err != nil {
		return reconcile.Result{}, r.contractError(s, v1alpha1.BootstrapReadyCondition, err)
	}
	if reason, message, failed := contract.Failure(obj); failed {
		s.fail(reason, fmt.Sprintf("%s %s: %s", ref.Kind, ref.Name, message))
		return reconcile.Result{}, nil
	}
	name, ready := contract.BootstrapDataSecret(obj)
	if !ready {
		r.missing(s, v1alpha1.BootstrapReadyCondition, ReasonBootstrapDataMissing,
			fmt.Sprintf("waiting for %s %s to provide bootstrap data", ref.Kind, ref.Name))
		return reconcile.Result{}, nil // its watch wakes us
	}
	b.DataSecretName = &name
	if err := s.patchObject(ctx); err != nil {
		return reconcile.Result{}, err
	}
	s.setCondition(v1alpha1.BootstrapReadyCondition, metav1.ConditionTrue, ReasonBootstrapDataReady,
		fmt.Sprintf("%s %s provided Secret %s", ref.Kind, ref.Name, name))
	return reconcile.Result{}, nil
}
