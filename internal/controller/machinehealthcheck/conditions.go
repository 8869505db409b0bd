package machinehealthcheck

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
)

// setMachineConditions records a verdict on a Machine (HealthCheckSucceeded)
// and, with ownerRemediate, asks its owner to replace it
// (OwnerRemediated=False). Only these two conditions are written, over the
// Machine's latest conditions: the machine controller owns the others.
func (r *Reconciler) setMachineConditions(ctx context.Context, m *v1alpha1.Machine, v verdict, ownerRemediate bool, now time.Time) error {
	w := patch.New(r.Client, m,
		patch.WithOwnedConditions(v1alpha1.HealthCheckSucceededCondition, v1alpha1.OwnerRemediatedCondition),
		patch.WithReader(r.APIReader))
	c := passing()
	switch {
	case v.reason == ReasonSelectionConflict:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v.reason, v.message
	case !v.healthy:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v.reason, v.message
	}
	setCondition(&m.Status.Conditions, c, m.Generation, now)
	if ownerRemediate {
		setCondition(&m.Status.Conditions, metav1.Condition{Type: v1alpha1.OwnerRemediatedCondition, Status: metav1.ConditionFalse,
			Reason: ReasonWaitingForRemediation, Message: v.message}, m.Generation, now)
	}
	return client.IgnoreNotFound(w.PatchStatus(ctx, m))
}

// recovered records that a Machine passes again: a remediation not yet
// acted on is withdrawn (OwnerRemediated removed, the external
// remediation object deleted, its budget grant or wait withdrawn). A
// Machine already Failed stays Failed.
func (r *Reconciler) recovered(ctx context.Context, mhc *v1alpha1.MachineHealthCheck, m *v1alpha1.Machine, now time.Time) error {
	if err := r.Gate.Withdraw(ctx, m, v1alpha1.DisruptionRemediation); err != nil {
		return err
	}
	before := findCondition(m, v1alpha1.HealthCheckSucceededCondition)
	if mhc.Spec.Remediation.TemplateRef != nil && before != nil && before.Status == metav1.ConditionFalse {
		if err := r.deleteRemediation(ctx, mhc, m); err != nil {
			return err
		}
	}
	w := patch.New(r.Client, m,
		patch.WithOwnedConditions(v1alpha1.HealthCheckSucceededCondition, v1alpha1.OwnerRemediatedCondition),
		patch.WithReader(r.APIReader))
	markPassing(m, now)
	return client.IgnoreNotFound(w.PatchStatus(ctx, m))
}

// passing is the HealthCheckSucceeded condition of a Machine that passes.
func passing() metav1.Condition {
	return metav1.Condition{Type: v1alpha1.HealthCheckSucceededCondition, Status: metav1.ConditionTrue,
		Reason: ReasonSucceeded, Message: "the Machine passes its health check"}
}

// markPassing records on m that it passes: HealthCheckSucceeded True and,
// unless it is Failed, no OwnerRemediated.
func markPassing(m *v1alpha1.Machine, now time.Time) {
	setCondition(&m.Status.Conditions, passing(), m.Generation, now)
	if m.Status.FailureReason == "" {
		meta.RemoveStatusCondition(&m.Status.Conditions, v1alpha1.OwnerRemediatedCondition)
	}
}

// recordedPassing reports whether markPassing would change nothing of m:
// the check of a Machine that passes and passed before, made without
// copying it (TestRecordedPassingIsMarkPassing).
func recordedPassing(m *v1alpha1.Machine) bool {
	want := passing()
	c := findCondition(m, want.Type)
	return c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message &&
		c.ObservedGeneration == m.Generation &&
		(m.Status.FailureReason != "" || findCondition(m, v1alpha1.OwnerRemediatedCondition) == nil)
}

// remediationGrants names the Machines of the namespace a budget granted
// a remediation, read from the cache without copies: a Machine that
// passes with none and waits for none has nothing for Gate.Withdraw to
// withdraw, and its budgets are not read for it.
func (r *Reconciler) remediationGrants(ctx context.Context, namespace string) (map[string]bool, error) {
	if r.Gate == nil {
		return nil, nil
	}
	list := &v1alpha1.MachineDisruptionBudgetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i := range list.Items {
		for _, d := range list.Items[i].Status.DisruptedMachines {
			if d.Kind == v1alpha1.DisruptionRemediation {
				out[d.Name] = true
			}
		}
	}
	return out, nil
}

// start remediates one unhealthy Machine.
func (r *Reconciler) start(ctx context.Context, mhc *v1alpha1.MachineHealthCheck, m *v1alpha1.Machine, v verdict, now time.Time) error {
	if mhc.Spec.Remediation.TemplateRef != nil {
		if err := r.createRemediation(ctx, mhc, m); err != nil {
			return err
		}
		// The reason marks the remediation in flight: the Machine counts
		// as unavailable in its budgets while the object exists
		// (machinefacts.Unavailable), not just for the grant's two minutes.
		v.reason = ReasonExternalRemediation
		return r.setMachineConditions(ctx, m, v, false, now)
	}
	return r.setMachineConditions(ctx, m, v, true, now)
}

// inFlight names the unhealthy Machines whose remediation has started:
// Failed (being replaced), marked OwnerRemediated=False, or with an
// external remediation object.
func (r *Reconciler) inFlight(ctx context.Context, mhc *v1alpha1.MachineHealthCheck, unhealthy []*target) (map[string]bool, error) {
	out := map[string]bool{}
	for _, t := range unhealthy {
		m := t.machine
		if c := findCondition(m, v1alpha1.OwnerRemediatedCondition); m.Status.FailureReason != "" || (c != nil && c.Status == metav1.ConditionFalse) {
			out[m.Name] = true
			continue
		}
		if mhc.Spec.Remediation.TemplateRef != nil {
			exists, err := r.remediationExists(ctx, mhc, m)
			if err != nil {
				return nil, err
			}
			out[m.Name] = exists
		}
	}
	return out, nil
}

// setCondition sets c; its transition time moves only when its status does.
func setCondition(conds *[]metav1.Condition, c metav1.Condition, generation int64, now time.Time) {
	c.ObservedGeneration = generation
	c.LastTransitionTime = metav1.NewTime(now)
	meta.SetStatusCondition(conds, c)
}

func findCondition(m *v1alpha1.Machine, t string) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, t)
}
