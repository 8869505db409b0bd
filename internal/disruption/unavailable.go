package disruption

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/preserve"
)

// Unavailable reports whether a Machine counts as unavailable in a budget,
// and why. It is the one definition (docs/disruption-budgets.md): a Machine
// is unavailable when it is
//
//   - being deleted (a rollout, a scale-down, a person);
//   - Failed (status.failureReason set);
//   - marked for replacement by a health check (OwnerRemediated False), or
//     remediated by its external remediation object (HealthCheckSucceeded
//     False, reason ExternalRemediationRequested);
//   - cordoned for an in-place update (status.inPlaceUpdate.phase Draining,
//     Updating or WaitingForNode);
//   - left cordoned and drained by an in-place update that Failed or was
//     Refused, while its target annotation is still on it (InPlaceStopped):
//     its Node may be Ready, but it serves no workload;
//   - not Ready (its Ready condition is not True: not yet Running, or its
//     Node is not Ready).
//
// Voluntary or not, each counts the same: a failure uses up the budget as
// much as a drain does.
func Unavailable(m *v1alpha1.Machine) (bool, string) {
	switch {
	case !m.DeletionTimestamp.IsZero():
		return true, "being deleted"
	case m.Status.FailureReason != "":
		return true, "Failed"
	case meta.IsStatusConditionFalse(m.Status.Conditions, v1alpha1.OwnerRemediatedCondition):
		return true, "being replaced by its health check"
	case remediatedExternally(m):
		return true, "being remediated externally (its health check's remediation object exists)"
	}
	if u := m.Status.InPlaceUpdate; u != nil {
		switch u.Phase {
		case v1alpha1.InPlaceDraining, v1alpha1.InPlaceUpdating, v1alpha1.InPlaceWaitingForNode:
			return true, "in an in-place update (" + string(u.Phase) + ")"
		}
	}
	if InPlaceStopped(m) {
		return true, "cordoned by an in-place update that stopped (" + string(m.Status.InPlaceUpdate.Phase) + ")"
	}
	if !meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition) {
		return true, "not Ready"
	}
	return false, ""
}

// counted reports whether a Machine a budget selects counts in it at all.
// A failed Machine kept by preservation has been replaced already (its
// owner no longer counts it): counting it would hold the budget for the
// whole preserve timeout (docs/preservation.md).
func counted(m *v1alpha1.Machine) bool {
	return !(preserve.Failed(m) && preserve.Held(m))
}

// remediatedExternally: a health check's external remediation object
// exists for the Machine (docs/health-checks.md).
func remediatedExternally(m *v1alpha1.Machine) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.HealthCheckSucceededCondition)
	return c != nil && c.Status == "False" && c.Reason == v1alpha1.ExternalRemediationRequestedReason
}
