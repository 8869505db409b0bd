package machinedeployment

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// defaultRevisionHistoryLimit applies when spec.revisionHistoryLimit is
// unset (the API server defaults it; this covers objects written before).
const defaultRevisionHistoryLimit = 10

// cleanupHistory deletes old sets beyond spec.revisionHistoryLimit, lowest
// revision first, and only sets that are empty: no Machine wanted, none
// reported, none left, and their controller has seen the last change. A
// pending rollback keeps them all, since it may name one.
func (r *Reconciler) cleanupHistory(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.deleting || s.md.Spec.RollbackTo != nil {
		return reconcile.Result{}, nil
	}
	limit := int32(defaultRevisionHistoryLimit)
	if s.md.Spec.RevisionHistoryLimit != nil {
		limit = *s.md.Spec.RevisionHistoryLimit
	}
	var entries []historyEntry
	byName := map[string]*v1alpha1.MachineSet{}
	for _, ms := range s.oldSets {
		if !ms.DeletionTimestamp.IsZero() {
			continue
		}
		byName[ms.Name] = ms
		entries = append(entries, historyEntry{
			Name:     ms.Name,
			Revision: revisionOf(ms.Annotations),
			Empty: ms.Spec.Replicas == 0 && ms.Status.Replicas == 0 && s.machineCounts[ms.UID] == 0 && !inTransit(ms) &&
				ms.Status.ObservedGeneration >= ms.Generation,
		})
	}
	for _, name := range historyToDelete(entries, limit) {
		// Preconditioned on the version we judged empty.
		ms := byName[name]
		if err := r.Client.Delete(ctx, ms, client.Preconditions{UID: &ms.UID, ResourceVersion: &ms.ResourceVersion}); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		s.log.Info("deleted old MachineSet beyond the revision history limit", "machineSet", name, "limit", limit)
	}
	return reconcile.Result{}, nil
}

// inTransit reports whether a set lists Machines moving in place: it is
// not empty, whatever its counts say (docs/in-place-updates.md).
func inTransit(ms *v1alpha1.MachineSet) bool {
	return ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation] != "" || ms.Annotations[v1alpha1.InPlaceMovingInAnnotation] != ""
}
