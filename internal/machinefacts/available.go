package machinefacts

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Unavailable reports whether a Machine is unavailable, and why. It is the
// one definition (docs/disruption-budgets.md): a Machine is unavailable
// when it is
//
//   - being deleted (a rollout, a scale-down, a person);
//   - Failed (status.failureReason set);
//   - interrupted: its provider announced it takes the VM away
//     (Interrupted True, docs/interruptions.md);
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
// Voluntary or not, each counts the same: a failure uses up a budget as
// much as a drain does.
func Unavailable(m *v1alpha1.Machine) (bool, string) {
	_, why := readySince(m)
	return why != "", why
}

// Available reports whether a Machine counts as available: not
// Unavailable, and Ready for at least minReady (a MachineDeployment's
// minReadySeconds; 0 for the disruption budgets).
func Available(m *v1alpha1.Machine, minReady time.Duration, now time.Time) bool {
	left, ok := UntilAvailable(m, minReady, now)
	return ok && left <= 0
}

// UntilAvailable is how long until a Machine becomes available (≤ 0: it
// is); ok is false for a Machine that is Unavailable, which no wait makes
// available.
func UntilAvailable(m *v1alpha1.Machine, minReady time.Duration, now time.Time) (left time.Duration, ok bool) {
	since, why := readySince(m)
	if why != "" {
		return 0, false
	}
	return since.Add(minReady).Sub(now), true
}

// AvailableSince is when a Machine that is not Unavailable turned Ready;
// ok is false for one that is Unavailable. A Machine is available from
// that instant plus minReady (Available): the instant is all a count
// kept between events needs to keep of it (the deployment's plan.Tally).
func AvailableSince(m *v1alpha1.Machine) (since time.Time, ok bool) {
	since, why := readySince(m)
	return since, why == ""
}

// readySince is when the Ready condition of a Machine that is not
// Unavailable turned True; why says why the Machine is Unavailable
// instead. The conditions are read in one pass: the planner asks this of
// every Machine of a fleet at every count (docs/benchmarks.md).
func readySince(m *v1alpha1.Machine) (since time.Time, why string) {
	switch {
	case !m.DeletionTimestamp.IsZero():
		return time.Time{}, "being deleted"
	case m.Status.FailureReason != "":
		return time.Time{}, "Failed"
	}
	var ready, remediated, external, interrupted bool
	for i := range m.Status.Conditions {
		c := &m.Status.Conditions[i]
		switch c.Type {
		case v1alpha1.ReadyCondition:
			ready, since = c.Status == metav1.ConditionTrue, c.LastTransitionTime.Time
		case v1alpha1.OwnerRemediatedCondition:
			remediated = c.Status == metav1.ConditionFalse
		case v1alpha1.HealthCheckSucceededCondition:
			external = c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ExternalRemediationRequestedReason
		case v1alpha1.InterruptedCondition:
			interrupted = c.Status == metav1.ConditionTrue
		}
	}
	switch {
	case interrupted:
		return time.Time{}, "interrupted by its provider"
	case remediated:
		return time.Time{}, "being replaced by its health check"
	case external:
		return time.Time{}, "being remediated externally (its health check's remediation object exists)"
	}
	if inCordonedPhase(m) {
		return time.Time{}, "in an in-place update (" + string(m.Status.InPlaceUpdate.Phase) + ")"
	}
	if InPlaceStopped(m) {
		return time.Time{}, "cordoned by an in-place update that stopped (" + string(m.Status.InPlaceUpdate.Phase) + ")"
	}
	if !ready {
		return time.Time{}, "not Ready"
	}
	return since, ""
}

// RemediatedExternally reports whether a health check's external
// remediation object exists for the Machine (docs/health-checks.md).
func RemediatedExternally(m *v1alpha1.Machine) bool {
	for _, c := range m.Status.Conditions {
		if c.Type == v1alpha1.HealthCheckSucceededCondition {
			return c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ExternalRemediationRequestedReason
		}
	}
	return false
}

// Interrupted reports whether the provider announced that it takes the
// Machine's VM away (docs/interruptions.md), and since when.
func Interrupted(m *v1alpha1.Machine) (bool, time.Time) {
	for _, c := range m.Status.Conditions {
		if c.Type == v1alpha1.InterruptedCondition {
			return c.Status == metav1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}
