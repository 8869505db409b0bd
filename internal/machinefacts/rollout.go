package machinefacts

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Rollout arithmetic: what a MachineDeployment's strategy allows above and
// below its replicas. The deployment's planner rolls within it; the safety
// controller's overshoot limit builds on it (docs/rollout.md).

// Fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against replicas. Only RollingUpdate has either; a nil rollingUpdate
// means maxSurge 1, maxUnavailable 0. When both resolve to 0 (a percentage
// rounding down), maxUnavailable becomes 1, as in Kubernetes, so the rollout
// can always move (docs/rollout.md).
func Fenceposts(md *v1alpha1.MachineDeployment) (surge, unavailable int32, err error) {
	if !IsRolling(md.Spec.Strategy.Type) {
		return 0, 0, nil
	}
	maxSurge, maxUnavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	if ru := md.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			maxSurge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			maxUnavailable = *ru.MaxUnavailable
		}
	}
	replicas := int(md.Spec.Replicas)
	s, err := intstr.GetScaledValueFromIntOrPercent(&maxSurge, replicas, true)
	if err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate.maxSurge: %w", err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, replicas, false)
	if err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate.maxUnavailable: %w", err)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	// maxUnavailable above replicas means nothing more than replicas.
	return int32(max(0, s)), int32(min(max(0, u), replicas)), nil
}

// IsRolling reports whether a strategy type is RollingUpdate ("" is).
func IsRolling(t v1alpha1.MachineDeploymentStrategyType) bool {
	return t == "" || t == v1alpha1.RollingUpdateStrategy
}

// MaxSurge is how many Machines above spec.replicas md may have during a
// rollout (maxSurge resolved against replicas; 0 unless RollingUpdate).
// The safety controller's overshoot limit builds on it.
func MaxSurge(md *v1alpha1.MachineDeployment) (int32, error) {
	surge, _, err := Fenceposts(md)
	return surge, err
}
