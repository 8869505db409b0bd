package machinedeployment

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
)

// rollout asks the planner (package plan) for every set's size and writes
// each set at most once, shrinks first; it comes back when a Ready Machine
// becomes available (minReadySeconds), the one change no watch event
// announces.
func (r *Reconciler) rollout(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.deleting {
		return reconcile.Result{}, nil
	}
	s.countMachines()
	defer s.emitScaled()
	in := s.planInput(ctx)
	in.HoldExpired = s.r.holds.expired(s.key, s.now)
	p := plan.Plan(in)
	if err := r.releaseUnwanted(ctx, s, p.Mode == plan.ModeInPlace); err != nil {
		return reconcile.Result{}, err
	}
	if p.Mode == plan.ModeInPlace {
		p, again, err := r.admitStarts(ctx, s, in, p)
		if err != nil {
			return reconcile.Result{}, err
		}
		res, err := r.rolloutInPlace(ctx, s, p)
		if again {
			// The granted starts are written; ask again for the rest soon.
			res = requeue.Soonest(res, reconcile.Result{RequeueAfter: requeue.ConflictRetry})
		}
		return res, err
	}
	res := reconcile.Result{RequeueAfter: s.nextAvailable}
	if p.Held {
		// Come back with the steps the Machine events of the coming
		// second add, or write this one then (see plan.BatchOf).
		res = requeue.Soonest(res, reconcile.Result{RequeueAfter: s.r.holds.held(s.key, s.now)})
	} else {
		s.r.holds.drop(s.key)
	}
	for _, t := range p.Writes() {
		s.log.V(1).Info("rollout plan", "mode", p.Mode, "machineSet", t.Name, "from", t.From, "to", t.To, "why", t.Why)
		if t.Create {
			if res, err := r.createNewSet(ctx, s, t.To); err != nil || s.stop {
				return res, err
			}
			continue
		}
		if err := s.scaleSet(ctx, s.set(t.Name), t.To); err != nil {
			return reconcile.Result{}, err
		}
	}
	return res, nil
}

// planInput is what the planner decides from.
func (s *scope) planInput(ctx context.Context) plan.Input {
	in := plan.Input{
		Strategy: s.md.Spec.Strategy.Type, Policy: plan.Policy(s.md), Replicas: s.md.Spec.Replicas,
		MaxSurge: s.surge, MaxUnavailable: s.unavailable, Batch: plan.BatchOf(s.surge, s.unavailable),
		Paused: s.md.Spec.Paused, Frozen: s.frozen, StatusReplicas: s.md.Status.Replicas,
		InPlace: s.inPlaceSettings,
	}
	if in.InPlace != nil {
		in.MaxUnavailable = 0 // the in-place plan has its own; RollingUpdate's is 0
	}
	set := func(ms *v1alpha1.MachineSet) plan.Set {
		v := s.planSet(ms)
		if in.InPlace != nil {
			s.inPlaceSet(ctx, ms, &v)
		}
		return v
	}
	for _, ms := range s.oldSets {
		in.Old = append(in.Old, set(ms))
	}
	if s.newSet != nil {
		n := set(s.newSet)
		in.New = &n
	}
	return in
}

// planSet is what the planner knows of ms: its Machines counted as of this
// reconcile (collect).
func (s *scope) planSet(ms *v1alpha1.MachineSet) plan.Set {
	v := plan.Set{
		Name: ms.Name, Revision: revisionOf(ms.Annotations), Created: ms.CreationTimestamp.Time,
		Spec: ms.Spec.Replicas, Deleting: !ms.DeletionTimestamp.IsZero(), Reported: ms.Status.Replicas,
		Counts: s.counts[ms.UID],
	}
	if d, ok := intAnnotation(ms.Annotations, v1alpha1.DesiredReplicasAnnotation); ok {
		v.Desired, v.HasDesired = d, true
	}
	v.MaxReplicas, _ = intAnnotation(ms.Annotations, v1alpha1.MaxReplicasAnnotation)
	return v
}

// countMachines counts each set's Machines for the planner and notes when
// the next Ready one becomes available. It runs after syncSets, which marks
// when an OnDelete set was superseded.
func (s *scope) countMachines() {
	minReady := time.Duration(s.md.Spec.MinReadySeconds) * time.Second
	for _, ms := range s.sets {
		since, err := time.Parse(time.RFC3339, ms.Annotations[v1alpha1.SupersededAtAnnotation])
		if err != nil {
			since = time.Time{}
		}
		var c plan.Counts
		var next time.Duration
		if s.tallied {
			c, next = s.r.tallies.counts(ms.UID, minReady, s.now, since)
		} else {
			c, next = plan.Count(s.machines[ms.UID], minReady, s.now, since)
		}
		s.counts[ms.UID] = c
		if next > 0 && (s.nextAvailable == 0 || next < s.nextAvailable) {
			s.nextAvailable = next
		}
	}
}

// emitScaled emits one Normal Event for the sets this reconcile scaled.
func (s *scope) emitScaled() {
	if len(s.scaled) > 0 {
		s.event(corev1.EventTypeNormal, reasonScalingSet, strings.Join(s.scaled, "; "))
	}
	s.scaled = nil
}
