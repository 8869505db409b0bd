package machine

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// A Machine a MachineHealthCheck selects is judged by the health check
// alone (docs/health-checks.md): its spec.lifecycle creation and health
// timeouts do not fail it; the health check marks it OwnerRemediated=False
// and this controller then fails it, within the group's meltdown limit,
// for its MachineSet to replace.

// lookupHealthChecks records which health checks (of the Machine's
// namespace, not being deleted) select the Machine.
func (r *Reconciler) lookupHealthChecks(ctx context.Context, s *scope) error {
	list := &v1alpha1.MachineHealthCheckList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.machine.Namespace), client.UnsafeDisableDeepCopy); err != nil { // read only
		s.healthChecks = nil
		return err
	}
	s.healthChecks = machinefacts.HealthChecksSelecting(list.Items, s.machine)
	return nil
}

// ownerRemediation fails a Machine a health check asked its owner to
// replace, once the meltdown limit allows.
func (r *Reconciler) ownerRemediation(ctx context.Context, s *scope) (reconcile.Result, error) {
	c := s.condition(v1alpha1.OwnerRemediatedCondition)
	if len(s.healthChecks) == 0 || c == nil || c.Status != metav1.ConditionFalse {
		return reconcile.Result{}, nil
	}
	allowed, why, err := r.replacementAllowed(ctx, s.machine, s.now)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !allowed {
		desc := "a MachineHealthCheck found the Machine unhealthy, but its replacement is deferred: " + why
		if s.machine.Status.LastOperation.Description != desc {
			s.event(corev1.EventTypeWarning, "ReplacementDeferred", desc)
		}
		s.operation(v1alpha1.OperationHealthCheck, v1alpha1.OperationProcessing, "", desc)
		return reconcile.Result{RequeueAfter: r.Config.BackoffBase}, nil
	}
	s.fail(FailureHealthCheck, "a MachineHealthCheck found the Machine unhealthy: "+c.Message)
	return reconcile.Result{}, nil
}

// healthCheckToMachines maps a health check to the Machines it selects,
// which stop or start applying their own health rules.
func (r *Reconciler) healthCheckToMachines(ctx context.Context, o client.Object) []reconcile.Request {
	mhc, ok := o.(*v1alpha1.MachineHealthCheck)
	if !ok {
		return nil
	}
	sel, err := mhc.Spec.Selector.AsSelector()
	if err != nil || sel.Empty() {
		return nil
	}
	machines := &v1alpha1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(o.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(machines.Items))
	for i := range machines.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&machines.Items[i])})
	}
	return reqs
}
