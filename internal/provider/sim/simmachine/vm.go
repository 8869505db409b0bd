package simmachine

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/driverpolicy"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// vmInfo is what the controller reports about a provisioned VM.
type vmInfo struct {
	providerID string
	zone       string
	// addresses is nil when the driver did not say (they are kept as they were).
	addresses []v1alpha1.MachineAddress
}

// callError is a driver call that did not succeed, with what to do about it.
type callError struct {
	method  driver.Method
	err     error
	outcome driverpolicy.Outcome
	// failureReason overrides the reason of a terminal failure.
	failureReason string
}

func newCallError(method driver.Method, err error) *callError {
	return &callError{method: method, err: err, outcome: driverpolicy.ClassifyError(method, err)}
}

// maxSteps bounds the driver calls of one reconcile: status, create,
// status, initialize, status. More means the driver contradicts itself;
// the next reconcile (with backoff) looks again.
const maxSteps = 5

// ensureVM makes the SimMachine's VM exist and be initialized, the way the
// machine controller does for driver Machines (docs/driver-errors.md):
// GetMachineStatus first, CreateMachine only when it says there is no
// VM, InitializeMachine when it says Uninitialized; every answer is
// classified by the driver's recovery table.
func (r *Reconciler) ensureVM(ctx context.Context, s *scope, userData []byte) (*vmInfo, *callError) {
	class, err := classFor(s)
	if err != nil {
		return nil, newCallError(driver.MethodCreateMachine, err)
	}
	m, secret := machineFor(s), secretFor(userData)
	var created *driver.CreateMachineResponse
	for range maxSteps {
		st, err := r.getStatus(ctx, m, class, secret)
		ce := newCallError(driver.MethodGetMachineStatus, err)
		switch ce.outcome.Action {
		case driverpolicy.Continue:
			return &vmInfo{providerID: st.ProviderID, zone: zoneOf(st.ProviderID), addresses: st.Addresses}, nil
		case driverpolicy.CreateVM:
			if s.sm.Spec.ProviderID != nil {
				if driver.CodeOf(err) == driver.Unimplemented {
					// The driver cannot tell; the VM we recorded stands.
					return &vmInfo{providerID: *s.sm.Spec.ProviderID, zone: zoneOf(*s.sm.Spec.ProviderID)}, nil
				}
				// Never a second VM for one SimMachine: the Machine is replaced instead.
				ce.outcome = driverpolicy.Outcome{Action: driverpolicy.Terminal}
				ce.failureReason = infrav1.FailureReasonUpdateError
				ce.err = driver.Errorf(driver.NotFound, "VM %s of this SimMachine no longer exists (%s); a SimMachine never gets a second VM: replace its Machine", *s.sm.Spec.ProviderID, driver.MessageOf(err))
				return nil, ce
			}
			if created != nil {
				// The driver cannot report status: trust the create, run the
				// optional initialization once.
				if ce := r.initialize(ctx, m, class, secret); ce != nil {
					return nil, ce
				}
				return &vmInfo{providerID: created.ProviderID, zone: zoneOf(created.ProviderID), addresses: created.Addresses}, nil
			}
			if created, err = r.create(ctx, m, class, secret); err != nil {
				return nil, newCallError(driver.MethodCreateMachine, err)
			}
			s.Event(corev1.EventTypeNormal, "Created", "created VM "+created.ProviderID)
			s.Log.Info("created VM", "providerID", created.ProviderID)
		case driverpolicy.InitializeVM:
			if ce := r.initialize(ctx, m, class, secret); ce != nil {
				return nil, ce
			}
		default:
			return nil, ce
		}
	}
	return nil, &callError{method: driver.MethodGetMachineStatus, outcome: driverpolicy.Outcome{Action: driverpolicy.Retry},
		err: driver.Errorf(driver.Aborted, "the VM was not provisioned after %d driver calls; looking again", maxSteps)}
}

func (r *Reconciler) getStatus(ctx context.Context, m *v1alpha1.Machine, class *v1alpha1.MachineClass, secret *corev1.Secret) (*driver.GetMachineStatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Config.CallTimeout)
	defer cancel()
	return r.Driver.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m, MachineClass: class, Secret: secret})
}

func (r *Reconciler) create(ctx context.Context, m *v1alpha1.Machine, class *v1alpha1.MachineClass, secret *corev1.Secret) (*driver.CreateMachineResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Config.CallTimeout)
	defer cancel()
	return r.Driver.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: class, Secret: secret})
}

// initialize runs InitializeMachine; nil when it succeeded or is not
// needed (SkipStep: Unimplemented, NotFound).
func (r *Reconciler) initialize(ctx context.Context, m *v1alpha1.Machine, class *v1alpha1.MachineClass, secret *corev1.Secret) *callError {
	ctx, cancel := context.WithTimeout(ctx, r.Config.CallTimeout)
	defer cancel()
	_, err := r.Driver.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: m, MachineClass: class, Secret: secret})
	ce := newCallError(driver.MethodInitializeMachine, err)
	switch ce.outcome.Action {
	case driverpolicy.Continue, driverpolicy.SkipStep:
		return nil
	}
	return ce
}

// deleteVM deletes the SimMachine's VM; nil once it is gone (OK or
// NotFound).
func (r *Reconciler) deleteVM(ctx context.Context, s *scope) *callError {
	ctx, cancel := context.WithTimeout(ctx, r.Config.CallTimeout)
	defer cancel()
	_, err := r.Driver.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: machineFor(s), MachineClass: deleteClassFor(s)})
	ce := newCallError(driver.MethodDeleteMachine, err)
	if ce.outcome.Action == driverpolicy.Continue {
		return nil
	}
	return ce
}
