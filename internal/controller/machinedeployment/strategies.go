package machinedeployment

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// rollingUpdate takes one step of a rolling update: grow the new set within
// the surge budget, or else shrink old sets within the availability floor.
// One kind of step per reconcile, as in Kubernetes: the next step is
// decided from what the MachineSet controller made of this one.
func (r *Reconciler) rollingUpdate(ctx context.Context, s *scope) (reconcile.Result, error) {
	replicas := s.md.Spec.Replicas
	all := s.views(s.sets)
	if s.newSet == nil {
		return r.createNewSet(ctx, s, rollingNewReplicas(replicas, s.surge, setView{}, all))
	}
	newView := s.view(s.newSet)
	if grew, err := s.scaleSet(ctx, s.newSet, rollingNewReplicas(replicas, s.surge, newView, all)); grew || err != nil {
		return reconcile.Result{}, err
	}
	old := s.views(s.oldSets)
	targets := rollingOldReplicas(replicas, s.unavailable, newView, old)
	sizes := map[string]int32{}
	for i, v := range old {
		if targets[i] != v.Spec {
			sizes[v.Name] = targets[i]
		}
	}
	return reconcile.Result{}, s.applySizes(ctx, sizes)
}

// recreate scales every old set to 0, waits until all their Machines are
// gone, then creates the new set at full size.
func (r *Reconciler) recreate(ctx context.Context, s *scope) (reconcile.Result, error) {
	sizes := map[string]int32{}
	for _, v := range s.views(s.oldSets) {
		if v.Spec > 0 {
			sizes[v.Name] = 0
		}
	}
	if len(sizes) > 0 {
		return reconcile.Result{}, s.applySizes(ctx, sizes)
	}
	for _, ms := range s.oldSets {
		if len(s.machines[ms.UID]) > 0 || ms.Status.Replicas > 0 {
			// Their deletion events wake us.
			return reconcile.Result{}, nil
		}
	}
	if s.newSet == nil {
		return r.createNewSet(ctx, s, s.md.Spec.Replicas)
	}
	_, err := s.scaleSet(ctx, s.newSet, s.md.Spec.Replicas)
	return reconcile.Result{}, err
}

// onDelete creates the new set at 0; then, whenever old Machines are gone
// (a person deleted them), shrinks their sets to what they have left and
// grows the new set by as much.
func (r *Reconciler) onDelete(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.newSet == nil {
		if res, err := r.createNewSet(ctx, s, 0); err != nil || s.stop {
			return res, err
		}
	}
	old := s.views(s.oldSets)
	left := make([]int32, len(s.oldSets))
	for i, ms := range s.oldSets {
		left[i] = leftOf(ms, s.machines[ms.UID])
	}
	newTarget, oldTargets := onDeleteReplicas(s.md.Spec.Replicas, old, left)
	sizes := map[string]int32{}
	if newTarget != s.newSet.Spec.Replicas {
		sizes[s.newSet.Name] = newTarget
	}
	for i, v := range old {
		if oldTargets[i] != v.Spec {
			sizes[v.Name] = oldTargets[i]
		}
	}
	return reconcile.Result{}, s.applySizes(ctx, sizes)
}

// leftOf counts an OnDelete old set's Machines that are not being deleted
// and existed when the set was superseded. One created later is a
// replacement the MachineSet controller made for a deleted Machine before
// this controller could shrink the set: not counting it shrinks the set
// past it, and, being the least advanced Machine, it is the one removed.
func leftOf(ms *v1alpha1.MachineSet, machines []*v1alpha1.Machine) int32 {
	since, err := time.Parse(time.RFC3339, ms.Annotations[v1alpha1.SupersededAtAnnotation])
	var n int32
	for _, m := range machines {
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if err == nil && m.CreationTimestamp.After(since) {
			continue
		}
		n++
	}
	return n
}
