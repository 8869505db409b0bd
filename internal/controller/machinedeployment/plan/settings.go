package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// Policy is md's replacement policy: TerminationComplete unless its
// rolling update says otherwise.
func Policy(md *v1alpha1.MachineDeployment) v1alpha1.ReplacementPolicy {
	if ru := md.Spec.Strategy.RollingUpdate; ru != nil && machinefacts.IsRolling(md.Spec.Strategy.Type) && ru.ReplacementPolicy != "" {
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
