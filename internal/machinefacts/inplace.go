package machinefacts

import "github.com/millwright-dev/millwright/api/v1alpha1"

// InPlaceInProgress reports whether the Machine is being updated in place
// for the target still annotated on it: cordoned and drained, updating, or
// its Node rebooting (status.inPlaceUpdate phase Draining, Updating or
// WaitingForNode). Its Node may be NotReady for a while on purpose; the
// update's own updateTimeout bounds that, not a health timeout: neither the
// machine controller's health step nor a MachineHealthCheck remediates it
// meanwhile (docs/in-place-updates.md, docs/health-checks.md).
func InPlaceInProgress(m *v1alpha1.Machine) bool {
	u := m.Status.InPlaceUpdate
	if u == nil || !forTarget(m, u) {
		return false
	}
	switch u.Phase {
	case v1alpha1.InPlaceDraining, v1alpha1.InPlaceUpdating, v1alpha1.InPlaceWaitingForNode:
		return true
	}
	return false
}

// InPlaceStopped reports whether the Machine's in-place update stopped
// short (Failed, or Refused by its provider) while its target is still
// annotated on it: its Node stays cordoned and drained until the update is
// retried or cleared, so it serves no workload (docs/in-place-updates.md).
func InPlaceStopped(m *v1alpha1.Machine) bool {
	u := m.Status.InPlaceUpdate
	if u == nil || !forTarget(m, u) {
		return false
	}
	return u.Phase == v1alpha1.InPlaceFailed || u.Phase == v1alpha1.InPlaceRefused
}

// CordonedInPlace reports whether an in-place update keeps the Machine's
// Node cordoned, a disruption Millwright chose: in one of the update's
// cordoned phases (Draining, Updating, WaitingForNode), or stopped short
// with its target still annotated (InPlaceStopped). Such a Machine is
// Unavailable.
func CordonedInPlace(m *v1alpha1.Machine) bool {
	return inCordonedPhase(m) || InPlaceStopped(m)
}

// inCordonedPhase: the update's phase is one that cordons the Node,
// whatever target it was for.
func inCordonedPhase(m *v1alpha1.Machine) bool {
	u := m.Status.InPlaceUpdate
	if u == nil {
		return false
	}
	switch u.Phase {
	case v1alpha1.InPlaceDraining, v1alpha1.InPlaceUpdating, v1alpha1.InPlaceWaitingForNode:
		return true
	}
	return false
}

// forTarget: the status describes the update to the annotated target (a
// status left from an earlier target, or from a cleared one, does not).
func forTarget(m *v1alpha1.Machine, u *v1alpha1.InPlaceUpdateStatus) bool {
	target := m.Annotations[v1alpha1.InPlaceTargetAnnotation]
	return target != "" && u.TargetSet == target
}
