package machine

import (
	"context"
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classsecret"
	"github.com/millwright-dev/millwright/internal/driverpolicy"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// hotUpdate applies a changed class providerSpec to the Machine's existing
// VM through UpdateMachine (docs/driver-errors.md, UpdateMachine), handing the
// driver the spec last applied, so it can tell what changed (a tag the
// class dropped is removed, others' tags are kept). The last applied spec
// is kept in an annotation; it is set when the VM is provisioned.
func (r *Reconciler) hotUpdate(ctx context.Context, s *scope, d *driverInfra) (reconcile.Result, error) {
	m := s.machine
	want := string(d.class.Spec.ProviderSpec.Raw)
	have, recorded := m.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation]
	if !recorded {
		// Provisioned before the spec was recorded: adopt the current one.
		return reconcile.Result{}, r.recordAppliedSpec(ctx, s, want)
	}
	if jsonEqual(have, want) {
		return reconcile.Result{}, nil
	}
	if d.r.plugins.lacks(ctx, d.class.Spec.Provider, d.drv, driver.MethodUpdateMachine, s.now, d.r.Config.DriverCallTimeout) {
		// Nothing to try, and nothing to record on each Machine: every
		// attempt wrote a failed Update to its status, and an Event, at
		// each backoff, for ever. The class says it once.
		d.r.updateNotImplemented(s, d)
		return reconcile.Result{}, nil
	}
	if m.Status.LastOperation.Type == v1alpha1.OperationUpdate {
		if wait := r.retryWait(s); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	secret, err := classsecret.Read(ctx, r.APIReader, d.class)
	if err != nil {
		return reconcile.Result{}, err
	}
	err = d.call(ctx, driver.MethodUpdateMachine, func(ctx context.Context) error {
		_, err := d.drv.UpdateMachine(ctx, &driver.UpdateMachineRequest{
			Machine: m, ProviderID: m.Spec.ProviderID, MachineClass: d.class, Secret: secret,
			LastAppliedProviderSpec: runtime.RawExtension{Raw: []byte(have)},
		})
		return err
	})
	if driverpolicy.ClassifyError(driver.MethodUpdateMachine, err).Action != driverpolicy.Continue {
		// A skipped update (Unimplemented, NotFound) is not an applied one:
		// the annotation keeps the spec the VM really has, and the change
		// is offered again after the backoff, so a driver that implements
		// UpdateMachine later still receives it.
		return r.failed(s, v1alpha1.OperationUpdate, driver.MethodUpdateMachine, err), nil
	}
	s.operation(v1alpha1.OperationUpdate, v1alpha1.OperationSucceeded, "", "applied the changed providerSpec of MachineClass "+d.class.Name+" in place")
	return reconcile.Result{}, r.recordAppliedSpec(ctx, s, want)
}

// ReasonUpdateNotImplemented is the Event on a MachineClass changed in
// place whose driver does not implement UpdateMachine.
const ReasonUpdateNotImplemented = "UpdateNotImplemented"

// updateNotImplemented says once per change of the class (its generation,
// in this process) that its Machines keep the spec they were made with.
func (r *Reconciler) updateNotImplemented(s *scope, d *driverInfra) {
	if !r.plugins.announce(d.class.UID, d.class.Generation) {
		return
	}
	msg := "the providerSpec changed, and the driver of provider " + d.class.Spec.Provider +
		" does not implement UpdateMachine: the class's existing Machines keep the spec they were made with (new ones get the new spec); replace them (a rollout) to apply it"
	s.log.Info("class changed in place; its driver cannot apply it", "class", d.class.Name, "provider", d.class.Spec.Provider)
	if r.Recorder != nil {
		r.Recorder.Eventf(d.class, nil, corev1.EventTypeWarning, ReasonUpdateNotImplemented, "Reconcile", "%s", msg)
	}
}

func (r *Reconciler) recordAppliedSpec(ctx context.Context, s *scope, spec string) error {
	if s.machine.Annotations == nil {
		s.machine.Annotations = map[string]string{}
	}
	s.machine.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation] = spec
	return s.patchObject(ctx)
}

// jsonEqual compares two JSON documents by meaning, not by spelling:
// the API server may reorder keys or change whitespace.
func jsonEqual(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return a == b
	}
	return reflect.DeepEqual(va, vb)
}
