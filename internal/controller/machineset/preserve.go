package machineset

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
)

// autoPreserve keeps up to spec.autoPreserveFailedMax failed Machines by
// marking them with the auto-preserved annotation (the machine controller
// then preserves them; docs/preservation.md), and takes the mark off the
// ones above the limit — all of them while the set's deployment is rolled
// out, which sets the limit to 0. failed are the set's failed Machines not
// held by preservation; it returns the names of those it keeps, which the
// caller must not delete.
//
// A Machine preserved before (it has a Preserved condition: its
// preservation expired or was refused) or whose own annotation says
// "false" is never kept automatically.
func (r *Reconciler) autoPreserve(ctx context.Context, s *scope, failed []*v1alpha1.Machine) (map[string]bool, error) {
	limit := 0
	if s.ms.Spec.AutoPreserveFailedMax != nil {
		limit = int(*s.ms.Spec.AutoPreserveFailedMax)
	}
	auto := s.ledger.named(s.ledger.autoKept) // sorted by name
	for _, m := range auto[min(limit, len(auto)):] {
		if err := r.markAutoPreserved(ctx, s, m, false); err != nil {
			return nil, err
		}
		r.event(s.ms, corev1.EventTypeNormal, "AutoPreserveReleased",
			fmt.Sprintf("Machine %s is no longer kept: the set keeps at most %d failed Machines now (0 while its deployment is rolled out)", m.Name, limit))
	}
	kept := map[string]bool{}
	room := limit - len(auto)
	if room <= 0 {
		return kept, nil
	}
	candidates := append([]*v1alpha1.Machine(nil), failed...)
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].Name < candidates[j].Name })
	for _, m := range candidates {
		if room == 0 {
			break
		}
		if machinefacts.AutoPreserved(m) || machinefacts.PreserveOptedOut(m) || meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PreservedCondition) != nil {
			continue
		}
		if err := r.markAutoPreserved(ctx, s, m, true); err != nil {
			return nil, err
		}
		kept[m.Name] = true
		room--
		r.event(s.ms, corev1.EventTypeNormal, "AutoPreserved",
			fmt.Sprintf("keeping failed Machine %s (spec.autoPreserveFailedMax %d) and creating its replacement", m.Name, limit))
	}
	return kept, nil
}

// markAutoPreserved sets or removes the auto-preserved annotation of m, a
// Machine the cache may own: it writes a copy, which counts until the
// reconcile ends (putUntilEnd).
func (r *Reconciler) markAutoPreserved(ctx context.Context, s *scope, m *v1alpha1.Machine, on bool) error {
	updated := m.DeepCopy()
	if on {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[v1alpha1.AutoPreservedAnnotation] = "true"
	} else {
		delete(updated.Annotations, v1alpha1.AutoPreservedAnnotation)
	}
	if err := patch.New(r.Client, m).PatchObject(ctx, updated); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.putUntilEnd(updated)
	s.log.Info("auto-preservation changed", "machine", m.Name, "preserved", on)
	return nil
}
