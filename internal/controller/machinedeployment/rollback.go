package machinedeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
)

// rollback carries out spec.rollbackTo: it copies the template of the named
// revision (0: the one before the current template) back into the
// deployment and clears rollbackTo; the rollout to it is then an ordinary
// one. A revision that does not exist clears rollbackTo with a Warning.
// As in Kubernetes, a paused deployment keeps its rollbackTo until resumed.
func (r *Reconciler) rollback(ctx context.Context, s *scope) (reconcile.Result, error) {
	md := s.md
	if md.Spec.RollbackTo == nil || md.Spec.Paused || s.deleting {
		return reconcile.Result{}, nil
	}
	// The template changes: the next reconcile decides from it, and writes
	// the status.
	s.stop, s.skipStatus = true, true
	var old []plan.Set
	for _, ms := range s.sets {
		if ms.DeletionTimestamp.IsZero() && !sameMachines(&ms.Spec.Template, &md.Spec.Template) {
			old = append(old, s.planSet(ms))
		}
	}
	revision := md.Spec.RollbackTo.Revision
	if revision == 0 {
		revision = previousRevision(old)
	}
	var target *v1alpha1.MachineSet
	for _, ms := range s.sets {
		if revision != 0 && ms.DeletionTimestamp.IsZero() && revisionOf(ms.Annotations) == revision {
			target = ms
		}
	}

	base := md.DeepCopy()
	md.Spec.RollbackTo = nil
	eventType, reason, message := corev1.EventTypeNormal, reasonRolledBack, fmt.Sprintf("rolled back to revision %d", revision)
	switch {
	case target == nil && base.Spec.RollbackTo.Revision == 0:
		eventType, reason, message = corev1.EventTypeWarning, reasonRollbackNotFound, "no earlier revision to roll back to"
	case target == nil:
		eventType, reason, message = corev1.EventTypeWarning, reasonRollbackNotFound, fmt.Sprintf("revision %d does not exist (any more)", revision)
	case sameMachines(&target.Spec.Template, &md.Spec.Template):
		eventType, reason, message = corev1.EventTypeWarning, reasonRollbackUnchanged, fmt.Sprintf("revision %d is the current template", revision)
	default:
		md.Spec.Template = *target.Spec.Template.DeepCopy()
		md.Spec.Template.Metadata.Labels = templateLabelsOf(base, target)
	}
	// The optimistic lock keeps a template someone wrote meanwhile.
	if err := s.patch.PatchObjectLocked(ctx, md); err != nil {
		*md = *base
		return reconcile.Result{}, err
	}
	s.log.Info("rollback", "reason", reason, "message", message)
	s.event(eventType, reason, message)
	return reconcile.Result{}, nil
}
