package machinedeployment

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// setView is what the rollout arithmetic knows of one MachineSet.
type setView struct {
	Name     string
	Revision int64
	Created  time.Time
	// Spec is spec.replicas; Status is status.replicas (Machines not being
	// deleted); Present is every Machine of the set, being deleted or not.
	Spec, Status, Present int32
	// Available is status.availableReplicas.
	Available int32
	// Desired and MaxReplicas are the annotations written when the set was
	// last scaled; HasDesired says whether the first is there, a
	// MaxReplicas of 0 means absent.
	Desired     int32
	HasDesired  bool
	MaxReplicas int32
}

// footprint is how many Machines the set may have at once: what it should
// have, what it reports, and what exists, including Machines still being
// deleted. The surge budget is spent on footprints.
func (v setView) footprint() int32 { return max(v.Spec, v.Status, v.Present) }

// sureAvailable is how many available Machines the set will keep: never
// more than its spec.replicas, however many it reports now.
func (v setView) sureAvailable() int32 { return max(0, min(v.Available, v.Spec)) }

func (v setView) active() bool { return v.Spec > 0 }

// fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against replicas. Only RollingUpdate has either; a nil rollingUpdate
// means maxSurge 1, maxUnavailable 0. When both resolve to 0 (a percentage
// rounding down), maxUnavailable becomes 1, as in Kubernetes, so the rollout
// can always move.
func fenceposts(md *v1alpha1.MachineDeployment) (surge, unavailable int32, err error) {
	if !isRolling(md) {
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

func isRolling(md *v1alpha1.MachineDeployment) bool {
	return md.Spec.Strategy.Type == "" || md.Spec.Strategy.Type == v1alpha1.RollingUpdateStrategy
}

func sum(sets []setView, f func(setView) int32) int32 {
	var n int32
	for _, s := range sets {
		n += f(s)
	}
	return n
}

// rollingNewReplicas is the spec.replicas the new set may have in this step
// of a rolling update: grown while the fleet's footprint is below
// replicas + maxSurge, never past replicas, and cut to replicas if above.
// all includes the new set.
func rollingNewReplicas(replicas, maxSurge int32, newSet setView, all []setView) int32 {
	if newSet.Spec >= replicas {
		return replicas
	}
	room := replicas + maxSurge - sum(all, setView.footprint)
	if room <= 0 {
		return newSet.Spec
	}
	return newSet.Spec + min(room, replicas-newSet.Spec)
}

// rollingOldReplicas is the spec.replicas of each old set (oldest first)
// after one scale-down step of a rolling update, as in Kubernetes:
//
//  1. Machines of old sets that are not available go first, as far as
//     maxScaledDown = Σ spec − (replicas − maxUnavailable) − the new set's
//     unavailable Machines allows; removing them costs no availability,
//     and a stuck old Machine would otherwise block the rollout.
//  2. Then available ones, oldest set first, while more than
//     replicas − maxUnavailable Machines stay available.
func rollingOldReplicas(replicas, maxUnavailable int32, newSet setView, old []setView) []int32 {
	targets := make([]int32, len(old))
	for i, o := range old {
		targets[i] = o.Spec
	}
	if sum(old, func(v setView) int32 { return v.Spec }) == 0 {
		return targets
	}
	minAvailable := replicas - maxUnavailable
	newUnavailable := newSet.Spec - newSet.sureAvailable()
	maxScaledDown := sum(old, func(v setView) int32 { return v.Spec }) + newSet.Spec - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return targets
	}

	var cleaned int32
	for i, o := range old {
		if cleaned >= maxScaledDown {
			break
		}
		unhealthy := targets[i] - o.sureAvailable()
		if unhealthy <= 0 {
			continue
		}
		n := min(maxScaledDown-cleaned, unhealthy)
		targets[i] -= n
		cleaned += n
	}

	available := newSet.sureAvailable()
	for i, o := range old {
		available += max(0, min(o.Available, targets[i]))
	}
	budget := available - minAvailable
	for i := range old {
		if budget <= 0 {
			break
		}
		n := min(targets[i], budget)
		targets[i] -= n
		budget -= n
	}
	return targets
}

// onDeleteReplicas is an OnDelete step: each old set keeps only what it has
// left (never more than its spec.replicas), and the new set fills up to
// replicas.
func onDeleteReplicas(replicas int32, old []setView, left []int32) (newTarget int32, oldTargets []int32) {
	oldTargets = make([]int32, len(old))
	var kept int32
	for i, o := range old {
		oldTargets[i] = max(0, min(o.Spec, left[i]))
		kept += oldTargets[i]
	}
	return max(0, replicas-kept), oldTargets
}

// MaxSurge is how many Machines above spec.replicas md may have during a
// rollout (maxSurge resolved against replicas; 0 unless RollingUpdate).
// The safety controller's overshoot limit builds on it.
func MaxSurge(md *v1alpha1.MachineDeployment) (int32, error) {
	surge, _, err := fenceposts(md)
	return surge, err
}
