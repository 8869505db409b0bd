package machine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classsecret"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/driverpolicy"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// inPlaceDriver has the driver apply the target class to the VM with
// UpdateMachine — the hot update's call, given the target class and the
// spec last applied — when the class or its providerSpec differs from
// what the VM has. The driver's answer decides (docs/driver-errors.md):
// OK goes on, FailedPrecondition refuses the update (the Machine is
// replaced), other terminal codes fail it, transient ones are retried
// with the backoff. Once applied, the last-applied annotation holds the
// target spec: a restart does not apply it again, and a retried (failed)
// update's hot update puts the VM back to the Machine's own class.
func (r *Reconciler) inPlaceDriver(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	m, u := s.machine, s.machine.Status.InPlaceUpdate
	if m.Spec.Class == nil || u.Class == "" {
		return true, reconcile.Result{}, nil // a provider's infrastructure object: only the version (structuralRefusal)
	}
	class := &v1alpha1.MachineClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: u.Class}, class); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, reconcile.Result{}, err
		}
		// The orchestration made the set from a template naming it; it
		// may still come. The updateTimeout ends the wait.
		u.Message = "waiting for MachineClass " + u.Class + ", which does not exist"
		return false, reconcile.Result{RequeueAfter: r.Config.LongBackoffBase}, nil
	}
	have := m.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation]
	if class.Name == m.Spec.Class.Name && jsonEqual(have, string(class.Spec.ProviderSpec.Raw)) {
		return true, reconcile.Result{}, nil // nothing for the driver to do
	}
	current := &v1alpha1.MachineClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.Class.Name}, current); err == nil &&
		current.Spec.Provider != class.Spec.Provider {
		r.endInPlace(s, v1alpha1.InPlaceRefused, fmt.Sprintf("MachineClass %s is of provider %s, the VM of provider %s: no driver can move a VM to another provider",
			class.Name, class.Spec.Provider, current.Spec.Provider))
		return false, reconcile.Result{}, nil
	}
	drv, ok := r.Drivers[class.Spec.Provider]
	if !ok {
		u.Message = "no driver is registered for provider " + class.Spec.Provider + " (MachineClass " + class.Name + ")"
		return false, reconcile.Result{RequeueAfter: r.Config.LongBackoffBase}, nil
	}
	if m.Status.LastOperation.Type == v1alpha1.OperationUpdate {
		if wait := r.retryWait(s); wait > 0 {
			return false, reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	// A cache behind this controller's own writes would call again for
	// an update already applied (its last-applied annotation not seen yet).
	fresh, err := r.createsFromCurrent(ctx, s)
	if err != nil || !fresh {
		return false, reconcile.Result{RequeueAfter: requeue.ConflictRetry}, err
	}
	secret, err := classsecret.Read(ctx, r.APIReader, class)
	if err != nil {
		return false, reconcile.Result{}, err
	}
	d := &driverInfra{r: r, class: class, drv: drv}
	err = d.call(ctx, driver.MethodUpdateMachine, func(ctx context.Context) error {
		_, err := d.drv.UpdateMachine(ctx, &driver.UpdateMachineRequest{
			Machine: m, ProviderID: m.Spec.ProviderID, MachineClass: class, Secret: secret,
			LastAppliedProviderSpec: runtime.RawExtension{Raw: []byte(have)},
		})
		return err
	})
	outcome := driverpolicy.ClassifyError(driver.MethodUpdateMachine, err)
	if outcome.Action == driverpolicy.Continue {
		s.operation(v1alpha1.OperationUpdate, v1alpha1.OperationSucceeded, "",
			"applied MachineClass "+class.Name+" to VM "+m.Spec.ProviderID+" in place")
		return true, reconcile.Result{}, r.recordAppliedSpec(ctx, s, string(class.Spec.ProviderSpec.Raw))
	}
	res := r.failed(s, v1alpha1.OperationUpdate, driver.MethodUpdateMachine, err)
	code, msg := driver.CodeOf(err), driver.MessageOf(err)
	switch {
	case outcome.Action == driverpolicy.Replace:
		r.endInPlace(s, v1alpha1.InPlaceRefused, fmt.Sprintf("UpdateMachine answered %s: %s", code, msg))
	case code == driver.Unimplemented:
		r.endInPlace(s, v1alpha1.InPlaceRefused, "the driver of provider "+class.Spec.Provider+" does not implement UpdateMachine: "+msg)
	case outcome.Retryable():
		u.Message = fmt.Sprintf("UpdateMachine answered %s, retrying: %s", code, msg)
		return false, res, nil
	default: // Terminal, or NotFound: the VM is gone
		r.endInPlace(s, v1alpha1.InPlaceFailed, fmt.Sprintf("UpdateMachine answered %s: %s", code, msg))
	}
	return false, reconcile.Result{}, nil
}
