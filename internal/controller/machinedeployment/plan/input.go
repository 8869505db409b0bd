package plan

import (
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Input is everything a plan is decided from.
type Input struct {
	// Strategy is the deployment's strategy type; "" means RollingUpdate.
	Strategy v1alpha1.MachineDeploymentStrategyType
	// Policy is how a Machine being deleted counts against the surge
	// budget; "" means TerminationComplete.
	Policy   v1alpha1.ReplacementPolicy
	Replicas int32
	// MaxSurge and MaxUnavailable are resolved against Replicas (see
	// machinefacts.Fenceposts); both 0 unless RollingUpdate.
	MaxSurge, MaxUnavailable int32
	// Paused: only scaling, no rollout. Frozen: no set grows.
	Paused, Frozen bool
	// StatusReplicas is the deployment's status.replicas: the base of
	// proportional scaling for a set without the max-replicas annotation.
	StatusReplicas int32
	// Batch is the smallest rolling step written while Machines are on
	// their way (BatchOf); 0 or 1 writes every step. HoldExpired: the
	// last step smaller than Batch was held for the coalescing delay, and
	// this one is written whatever its size.
	Batch       int32
	HoldExpired bool
	// New is the set of the current template; nil until it exists.
	New *Set
	// Old are the other owned sets, oldest first, sets being deleted
	// included (their Machines still count).
	Old []Set
	// InPlace are the settings of strategy InPlace; nil for the others.
	InPlace *InPlaceSettings
}

// Set is what the planner knows of one MachineSet.
type Set struct {
	Name     string
	Revision int64
	Created  time.Time
	// Spec is spec.replicas.
	Spec int32
	// Deleting: the MachineSet itself is being deleted; it keeps nothing,
	// whatever its spec says, and is never written.
	Deleting bool
	// Desired and MaxReplicas are the annotations written when the set was
	// last scaled; HasDesired says whether the first is there, a
	// MaxReplicas of 0 means absent.
	Desired     int32
	HasDesired  bool
	MaxReplicas int32
	// Reported is status.replicas: only Recreate reads it, to wait for a
	// MachineSet controller that may still be creating an old Machine.
	Reported int32
	Counts
	// MovingOut and MovingIn are the set's in-place lists (the
	// InPlaceMovingOut/InPlaceMovingIn annotations), sorted; Members are
	// the Machines it controls. Only strategy InPlace reads them.
	MovingOut, MovingIn []string
	Members             []Machine
}

// Counts are a set's Machines, counted by Count.
type Counts struct {
	// Machines is every Machine object of the set, being deleted or not.
	Machines int32
	// Terminating are those being deleted.
	Terminating int32
	// Available are those machinefacts.Available says are, with the
	// deployment's minReadySeconds.
	Available int32
	// Left (OnDelete) are those not being deleted that existed when the set
	// was superseded.
	Left int32
	// Failed are those not being deleted with a failureReason: their set
	// deletes and replaces them whatever its size, so no scale-down picks
	// them.
	Failed int32
	// AvailableAhead are the available Machines a scale-down of the set
	// takes before some of its unavailable ones: those the delete-machine
	// annotation or a lower delete priority puts first
	// (machinefacts.DeleteGroup).
	AvailableAhead int32
}

// spec is what the set keeps: 0 for a set being deleted.
func (s Set) spec() int32 {
	if s.Deleting {
		return 0
	}
	return s.Spec
}

func (s Set) active() bool { return s.spec() > 0 }

// footprint is how many Machines the set may have at once against the
// surge budget at size spec: its MachineSet controller keeps
// max(spec, live) Machines that are not being deleted, and, with
// TerminationComplete, those being deleted count until they are gone.
func (s Set) footprint(policy v1alpha1.ReplacementPolicy, spec int32) int32 {
	if policy == v1alpha1.TerminationStarted {
		return max(spec, s.live())
	}
	return max(spec, s.live()) + s.Terminating
}

// live are the set's Machines not being deleted.
func (s Set) live() int32 { return s.Machines - s.Terminating }

// pickable are the set's Machines a scale-down picks from: not being
// deleted, not failed.
func (s Set) pickable() int32 { return s.live() - s.Failed }

// A scale-down of a set takes, of its pickable Machines, its
// AvailableAhead ones first (at the worst: they may also come after some
// unavailable ones), then its other unavailable ones, then the rest of
// its available ones (machinefacts.DeleteGroup, docs/rollout.md). The
// two functions below count with that order.

// sureAvailable is how many available Machines the set keeps at size
// spec: never more than spec, however many it has now, and fewer when a
// scale-down to spec takes available Machines ahead of unavailable ones.
func (s Set) sureAvailable(spec int32) int32 {
	cut := max(0, s.pickable()-spec)
	gone := min(cut, s.AvailableAhead) + max(0, s.Available-s.AvailableAhead-spec)
	return max(0, s.Available-gone)
}

// unavailableFirst is how many of the set's replicas at size spec go
// before an available Machine would: the replicas not yet made, then the
// unavailable Machines a scale-down takes before any available one.
func (s Set) unavailableFirst(spec int32) int32 {
	missing := max(0, spec-s.pickable())
	cut := max(0, s.pickable()-spec)
	if cut < s.AvailableAhead {
		return missing // the next one a scale-down takes is available
	}
	unavailable := s.pickable() - s.Available
	return missing + max(0, s.AvailableAhead+unavailable-cut)
}
