package machinehealthcheck

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// withdrawOrphaned withdraws the remediation requests of the Machines of a
// namespace that wait for a budget to remediate them while no live health
// check selects them any more (theirs was deleted): nothing would ever ask
// again, and their DisruptionAllowed=False would stay, listed as waiting on
// the budget (docs/health-checks.md). A health check has no finalizer, so
// the namespace is searched rather than the deleted check's selection.
func (r *Reconciler) withdrawOrphaned(ctx context.Context, namespace string) error {
	machines := &v1alpha1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var checks *v1alpha1.MachineHealthCheckList
	for i := range machines.Items {
		m := &machines.Items[i]
		if !disruption.WaitsFor(m, v1alpha1.DisruptionRemediation) {
			continue
		}
		if checks == nil {
			checks = &v1alpha1.MachineHealthCheckList{}
			if err := r.Client.List(ctx, checks, client.InNamespace(namespace)); err != nil {
				return err
			}
		}
		if len(machinefacts.HealthChecksSelecting(checks.Items, m)) > 0 {
			continue
		}
		if err := r.Gate.Withdraw(ctx, m, v1alpha1.DisruptionRemediation); err != nil {
			return err
		}
	}
	return nil
}
