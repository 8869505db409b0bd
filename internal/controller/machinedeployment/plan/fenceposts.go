package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against replicas. Only RollingUpdate has either; a nil rollingUpdate
// means maxSurge 1, maxUnavailable 0. When both resolve to 0 (a percentage
// rounding down), maxUnavailable becomes 1, as in Kubernetes, so the rollout
// can always move.
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

// Policy is md's replacement policy: TerminationComplete unless its
// rolling update says otherwise.
func Policy(md *v1alpha1.MachineDeployment) v1alpha1.ReplacementPolicy {
	if ru := md.Spec.Strategy.RollingUpdate; ru != nil && IsRolling(md.Spec.Strategy.Type) && ru.ReplacementPolicy != "" {
		return ru.ReplacementPolicy
	}
	return v1alpha1.TerminationComplete
}

// InPlaceOf resolves md's strategy.inPlace; nil unless its strategy is
// InPlace. maxUnavailable (default 1) rounds down against replicas but is
// never below 1, so the update can always move; maxFailed defaults to 0.
func InPlaceOf(md *v1alpha1.MachineDeployment) (*InPlaceSettings, error) {
	if md.Spec.Strategy.Type != v1alpha1.InPlaceStrategy {
		return nil, nil
	}
	s := &InPlaceSettings{MaxUnavailable: 1}
	ip := md.Spec.Strategy.InPlace
	if ip == nil {
		return s, nil
	}
	s.Manual = ip.Orchestration == v1alpha1.InPlaceManual
	if ip.MaxUnavailable != nil {
		u, err := intstr.GetScaledValueFromIntOrPercent(ip.MaxUnavailable, int(md.Spec.Replicas), false)
		if err != nil {
			return nil, fmt.Errorf("spec.strategy.inPlace.maxUnavailable: %w", err)
		}
		s.MaxUnavailable = int32(max(1, u))
	}
	if ip.MaxFailed != nil {
		s.MaxFailed = max(0, *ip.MaxFailed)
	}
	return s, nil
}
