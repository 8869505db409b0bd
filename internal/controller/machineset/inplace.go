package machineset

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// An in-place update (docs/in-place-updates.md) moves a Machine from an
// old MachineSet to the new one without replacing it. While it is in
// transit both sets list it (the MachineDeployment controller writes each
// list in the same patch as the set's replicas): the old set in its
// moving-out list, the new one in its moving-in list. A set counts the
// Machines it controls, minus its moving-out list, plus its moving-in list
// (a moved Machine, controlled and listed, counts once), so neither
// creates nor deletes a Machine because of one in transit. A listed
// Machine is never a scale-down victim; a moving-in one is not available
// until its update succeeded and it is Ready.

// collectInPlace finds the Machines moving in that the set does not
// control yet (from the cache; one that does not exist counts for
// nothing). The ledger reads the moving-out list (ledger.go).
func (r *Reconciler) collectInPlace(ctx context.Context, s *scope) error {
	s.movingIn = nil
	for _, n := range machinefacts.InPlaceNames(s.ms.Annotations[v1alpha1.InPlaceMovingInAnnotation]) {
		if _, own := s.owned[n]; own {
			continue
		}
		m := &v1alpha1.Machine{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.ms.Namespace, Name: n}, m); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		s.movingIn = append(s.movingIn, m)
	}
	return nil
}

// countsIn reports whether a Machine moving in counts as one of the set's
// replicas: it is not being deleted, not preserved, not failed.
func countsIn(m *v1alpha1.Machine) bool {
	return m.DeletionTimestamp.IsZero() && !machinefacts.Preserved(m) && m.Status.FailureReason == ""
}

// movedInReady reports whether a Machine moving in counts as ready: its
// update to this set succeeded and it is Ready.
func movedInReady(ms *v1alpha1.MachineSet, m *v1alpha1.Machine) bool {
	u := m.Status.InPlaceUpdate
	return u != nil && u.Phase == v1alpha1.InPlaceSucceeded && u.TargetSet == ms.Name &&
		meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition)
}
