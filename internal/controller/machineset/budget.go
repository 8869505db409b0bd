package machineset

import (
	"cmp"
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// reasonWaitingForBudget is the reason of the set's DisruptionAllowed
// condition and Warning Event while a victim waits for a budget.
const reasonWaitingForBudget = "WaitingForDisruptionBudget"

// deleteVictims asks the MachineDisruptionBudgets for the victims, in
// order, and deletes those granted (docs/disruption-budgets.md). It stops
// asking at the first one held back: the ones after it would be held back
// too, and asking would only mark each one waiting. The budget's recount
// (watched, setup.go) or the waiting Machine's own change wakes the set
// again. A Conflict (another controller took a disruption in between)
// deletes what was granted and comes back soon. The granted victims are
// deleted at once (deleteBatch), up to MaxDeleteBatch of them: the others
// stay victims, deleted by the next reconciles.
func (r *Reconciler) deleteVictims(ctx context.Context, s *scope, want []*v1alpha1.Machine) (reconcile.Result, error) {
	if most := cmp.Or(r.MaxDeleteBatch, DefaultMaxDeleteBatch); len(want) > most {
		markVictims(s, want[most:])
		want = want[:most]
	}
	var granted []*v1alpha1.Machine
	res, err := r.askBudgets(ctx, s, want, &granted)
	deleted, derr := r.deleteBatch(ctx, s, granted, "scaling down")
	if apierrors.IsConflict(derr) {
		// A victim let through as unavailable changed since (deleted):
		// it is asked for again from the cache's newer version.
		derr, res = nil, reconcile.Result{RequeueAfter: requeue.ConflictRetry}
	}
	// One Event for the reconcile's scale-down, as for its creates: an
	// Event is an API write, and a rolling update shrinks a set a few
	// Machines at a time.
	if len(deleted) > 0 {
		r.event(s.ms, corev1.EventTypeNormal, "MachinesDeleted", fmt.Sprintf("deleting %d Machine(s), scaling down: %s", len(deleted), brief.List(deleted, 5, ", ")))
	}
	if err == nil {
		err = derr
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	return res, nil
}

// askBudgets asks the budgets for want, in order and at once
// (Gate.RequestAll: one write per budget), appending each victim granted
// to granted, up to the first one held back (the set then says it waits).
// A budget changed in between grants none: they are asked again soon.
// The decisions may come with an error (marking the one held back
// failed): the grants are written, and the victims granted are deleted.
func (r *Reconciler) askBudgets(ctx context.Context, s *scope, want []*v1alpha1.Machine, granted *[]*v1alpha1.Machine) (reconcile.Result, error) {
	markVictims(s, want)
	rollout := r.oldRevision(ctx, s.ms)
	asks := make([]disruption.Ask, len(want))
	for i, m := range want {
		asks[i] = disruption.Ask{Machine: m, Kind: disruptionKind(m, rollout)}
	}
	ds, err := r.Gate.RequestAll(ctx, asks)
	if ds == nil && apierrors.IsConflict(err) {
		s.log.V(1).Info("a budget changed while asking it; asking again", "machines", len(want))
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	for i, d := range ds {
		m := want[i]
		if !d.Allowed {
			s.waiting = fmt.Sprintf("%d Machine(s) to delete wait, first %s: %s", len(want)-i, m.Name, d.Message)
			break
		}
		*granted = append(*granted, m)
		s.pinned[m.Name] = d.AsUnavailable
	}
	return reconcile.Result{}, err
}

func markVictims(s *scope, ms []*v1alpha1.Machine) {
	for _, m := range ms {
		s.victims[m.Name] = true
	}
}

// disruptionKind is what deleting m is, for the budget: the end of its
// preservation (it has a Preserved condition, no longer True), a rollout
// (its set is an old revision of its deployment) or a scale-down.
func disruptionKind(m *v1alpha1.Machine, rollout bool) v1alpha1.DisruptionKind {
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PreservedCondition); c != nil && c.Status != metav1.ConditionTrue {
		return v1alpha1.DisruptionPreservationEnd
	}
	if rollout {
		return v1alpha1.DisruptionRollout
	}
	return v1alpha1.DisruptionScaleDown
}

// oldRevision reports whether ms is an old revision of its deployment:
// another set of the same deployment has a higher revision (the
// deployment's new set has the highest).
func (r *Reconciler) oldRevision(ctx context.Context, ms *v1alpha1.MachineSet) bool {
	md := ms.Labels[v1alpha1.MachineDeploymentNameLabel]
	owner := metav1.GetControllerOfNoCopy(ms)
	if md == "" || owner == nil {
		return false
	}
	sets := &v1alpha1.MachineSetList{}
	// Read only: the cache's objects, not copies.
	if err := r.Client.List(ctx, sets, client.InNamespace(ms.Namespace), client.MatchingLabels{v1alpha1.MachineDeploymentNameLabel: md},
		client.UnsafeDisableDeepCopy); err != nil {
		return false
	}
	own := revision(ms)
	for i := range sets.Items {
		o := &sets.Items[i]
		if ref := metav1.GetControllerOfNoCopy(o); o.UID != ms.UID && ref != nil && ref.UID == owner.UID && revision(o) > own {
			return true
		}
	}
	return false
}

func revision(ms *v1alpha1.MachineSet) int64 {
	v, err := strconv.ParseInt(ms.Annotations[v1alpha1.RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// releaseUnwanted gives back the disruptions the set waited for and no
// longer wants (the scale-down was undone, another victim went first):
// otherwise the Machine keeps saying it waits, and the budget lists it.
// Only the set's own kinds: a remediation waiting on the same Machine is
// the health check's.
func (r *Reconciler) releaseUnwanted(ctx context.Context, s *scope) error {
	for _, m := range s.ledger.named(s.ledger.waits) { // not deleting
		kind, _ := disruptionWaiting(m)
		if s.victims[m.Name] {
			continue
		}
		if err := r.Gate.Withdraw(ctx, m, kind); err != nil {
			return err
		}
		s.log.Info("released a disruption no longer wanted", "machine", m.Name, "kind", kind)
	}
	return nil
}

// setWaiting says on the set's DisruptionAllowed condition, and in a
// Warning Event when it starts waiting, which of its deletions wait for
// a budget; the condition goes when none waits.
func (r *Reconciler) setWaiting(s *scope) {
	if !s.scaled {
		return // nothing asked this time (expectations pending): as it was
	}
	prev := meta.FindStatusCondition(s.ms.Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	if s.waiting == "" {
		meta.RemoveStatusCondition(&s.ms.Status.Conditions, v1alpha1.DisruptionAllowedCondition)
		return
	}
	if prev == nil {
		r.event(s.ms, corev1.EventTypeWarning, reasonWaitingForBudget, s.waiting)
	}
	r.setCondition(s, v1alpha1.DisruptionAllowedCondition, metav1.ConditionFalse, reasonWaitingForBudget, s.waiting)
}

// disruptionWaiting reports whether m waits for a disruption of a kind the
// set asks for.
func disruptionWaiting(m *v1alpha1.Machine) (v1alpha1.DisruptionKind, bool) {
	kind, waits := disruption.Waiting(m)
	switch kind {
	case v1alpha1.DisruptionRollout, v1alpha1.DisruptionScaleDown, v1alpha1.DisruptionPreservationEnd:
		return kind, waits
	}
	return kind, false
}
