package machinedeployment

import (
	"context"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// rollout takes one step: scaling first (a paused deployment only scales,
// and a scaling event is settled before the rollout goes on, as in the
// seed), then the strategy's step.
func (r *Reconciler) rollout(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.deleting {
		return reconcile.Result{}, nil
	}
	if s.md.Spec.Paused || isScalingEvent(s.md.Spec.Replicas, s.views(s.sets)) {
		return reconcile.Result{}, r.scale(ctx, s)
	}
	switch s.md.Spec.Strategy.Type {
	case v1alpha1.RecreateStrategy:
		return r.recreate(ctx, s)
	case v1alpha1.OnDeleteStrategy:
		return r.onDelete(ctx, s)
	default:
		return r.rollingUpdate(ctx, s)
	}
}

// scale settles a scaling event (see planScale).
func (r *Reconciler) scale(ctx context.Context, s *scope) error {
	in := scaleInput{
		Replicas: s.md.Spec.Replicas, MaxSurge: s.surge, StatusReplicas: s.md.Status.Replicas,
		Paused: s.md.Spec.Paused,
	}
	var live []setView
	for _, v := range s.views(s.sets) {
		if s.set(v.Name).DeletionTimestamp.IsZero() {
			live = append(live, v)
		}
	}
	in.Sets = live
	if s.newSet != nil {
		in.NewSet = s.newSet.Name
	}
	return s.applySizes(ctx, planScale(in))
}

// applySizes scales sets to the given sizes, shrinking ones first so the
// fleet never grows past its budget in between.
func (s *scope) applySizes(ctx context.Context, sizes map[string]int32) error {
	names := make([]string, 0, len(sizes))
	for name := range sizes {
		names = append(names, name)
	}
	growth := func(name string) int32 { return sizes[name] - s.set(name).Spec.Replicas }
	sort.Slice(names, func(i, j int) bool {
		if gi, gj := growth(names[i]), growth(names[j]); gi != gj {
			return gi < gj
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		if _, err := s.scaleSet(ctx, s.set(name), sizes[name]); err != nil {
			return err
		}
	}
	return nil
}
