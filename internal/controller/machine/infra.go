package machine

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// infrastructure is the seam between a Machine's lifecycle and whatever
// makes its VM: a driver (spec.class) today, a provider's InfraMachine
// object (spec.infrastructureRef) later. The lifecycle code never knows
// which one it talks to.
type infrastructure interface {
	// ensure makes the VM exist and be initialized. It records providerID,
	// node name, addresses and the InfrastructureReady condition on s.
	ensure(ctx context.Context, s *scope) (reconcile.Result, error)
	// update applies in-place changes to an existing VM (hot update).
	update(ctx context.Context, s *scope) (reconcile.Result, error)
	// delete deletes the VM; done once it is gone.
	delete(ctx context.Context, s *scope) (done bool, res reconcile.Result, err error)
	// volumeIDs maps persistent volume specs to the provider's volume IDs.
	volumeIDs(ctx context.Context, specs []*corev1.PersistentVolumeSpec) ([]string, error)
}

// infrastructureFor returns the Machine's infrastructure, or nil when a
// prerequisite is missing (the conditions then say which).
func (r *Reconciler) infrastructureFor(ctx context.Context, s *scope) (infrastructure, error) {
	m := s.machine
	if m.Spec.Class == nil { // the API allows exactly one of class and infrastructureRef
		return &contractInfra{r: r}, nil
	}
	class := &v1alpha1.MachineClass{}
	key := types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.Class.Name}
	if err := r.Client.Get(ctx, key, class); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		classMissing(r, s, key)
		return nil, nil
	}
	drv, ok := r.Drivers[class.Spec.Provider]
	if !ok {
		r.missing(s, v1alpha1.InfrastructureReadyCondition, ReasonDriverNotRegistered,
			"no driver is registered for provider "+class.Spec.Provider+" (MachineClass "+class.Name+"); start the manager with --driver "+class.Spec.Provider+"=ENDPOINT")
		return nil, nil
	}
	return &driverInfra{r: r, class: class, drv: drv}, nil
}

// missing records a missing prerequisite once, as a condition and an Event.
func (r *Reconciler) missing(s *scope, condType, reason, message string) {
	if c := s.condition(condType); c == nil || c.Reason != reason || c.Message != message {
		s.event(corev1.EventTypeWarning, reason, message)
		s.log.Info("prerequisite missing", "reason", reason, "message", message)
	}
	s.setCondition(condType, metav1.ConditionFalse, reason, message)
}
