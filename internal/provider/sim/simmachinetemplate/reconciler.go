package simmachinetemplate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// Reconciler fills status.capacity of SimMachineTemplates.
type Reconciler struct {
	// Client reads SimMachineTemplates (from the cache) and patches their
	// status.
	Client client.Client
	// Recorder, when set, receives a Warning Event for a template whose
	// providerSpec the sim refuses, the one case a user must act on.
	Recorder events.EventRecorder
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("simmachinetemplate").
		// Every update is reconciled, status-only ones included: a
		// reconcile costs no more than a cache read, and a status.capacity
		// changed by someone else (by hand, an older writer) is then put
		// right at once rather than at the next resync. Our own patch
		// brings one more reconcile, which finds nothing to do.
		For(&infrav1.SimMachineTemplate{}).
		Complete(r)
}

// Reconcile computes the capacity of a Node made from the template and
// patches status.capacity when it differs. A providerSpec the sim refuses
// (an unknown instance type, ...) leaves the capacity empty and records a
// Warning Event, without an error: retrying cannot fix the spec, which the
// API server keeps immutable (the SimMachineSpec rule); a corrected
// template is a new object, reconciled when it is created.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &infrav1.SimMachineTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want, err := capacity(&t.Spec.Template.Spec)
	if err != nil {
		// Any capacity already there (written by hand, or by someone
		// else) goes too: no Node is ever made from this template, and
		// readers would size its group from resources no Node has.
		msg := fmt.Sprintf("spec.template.spec.%s; status.capacity is left empty", driver.MessageOf(err))
		log.FromContext(ctx).Info("providerSpec refused", "error", msg)
		if r.Recorder != nil {
			r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, infrav1.FailureReasonInvalidConfiguration, "ComputeCapacity", "%s", msg)
		}
	}
	// Semantic equality compares quantities by value ("4096Mi" is "4Gi")
	// and treats an empty list as none, so only a real change is patched.
	if apiequality.Semantic.DeepEqual(t.Status.Capacity, want) {
		return ctrl.Result{}, nil
	}
	h := patch.New(r.Client, t)
	t.Status.Capacity = want
	// A merge patch of the status alone: it cannot overwrite a concurrent
	// spec change, and resource names the new capacity lacks are removed.
	return ctrl.Result{}, h.PatchStatus(ctx, t)
}

// capacity is what a Node made from spec registers with: the resources of
// the providerSpec's instance type, exactly as the sim's VMs of a
// SimMachine get them (a SimMachine's class has no nodeTemplate to
// override them). The providerSpec is decoded as the SimMachine controller
// decodes it, so a spec its clones would fail with (InvalidConfiguration)
// has no capacity either: no Node is ever made from it.
func capacity(spec *infrav1.SimMachineSpec) (corev1.ResourceList, error) {
	ps, err := sim.DecodeProviderSpec(spec.ProviderSpec.Raw)
	if err != nil {
		return nil, err
	}
	name := ps.InstanceType
	if name == "" {
		name = sim.DefaultInstanceType
	}
	it, ok := sim.LookupInstanceType(name)
	if !ok {
		// DecodeProviderSpec refuses unknown instance types; this only
		// guards against the two drifting apart.
		return nil, driver.Errorf(driver.InvalidArgument, "providerSpec.instanceType: unknown instance type %q", name)
	}
	return it.Resources(), nil
}
