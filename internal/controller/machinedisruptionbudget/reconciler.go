// Package machinedisruptionbudget is the MachineDisruptionBudget
// controller: it counts, for each budget, the Machines it selects, those
// unavailable and the grants not yet taken effect, and writes how many
// more voluntary disruptions the budget allows — the number the gate
// (internal/disruption) takes grants from. docs/disruption-budgets.md
// describes the rules.
package machinedisruptionbudget

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/ownwrites"
	"github.com/millwright-dev/millwright/internal/patch"
)

// Reconciler reconciles MachineDisruptionBudgets.
type Reconciler struct {
	// Client reads (from the cache) and writes the control cluster.
	Client client.Client
	// APIReader reads past the cache: a granted Machine the cache does not
	// show may only be one it has not seen yet, not one that is gone.
	APIReader client.Reader
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Views reads the namespace's Machines as the cache's own objects,
	// not copies (ownerindex.Views). Nil reads them with a List.
	Views *ownerindex.Views

	// tallies keep each budget's tally between reconciles, and the
	// Machines whose events arrived since (tally.go).
	tallies changed.Store[*kept]
	// written are the versions of each budget our status writes replaced.
	written ownwrites.Record
}

// Reconcile recounts one budget.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	b := &v1alpha1.MachineDisruptionBudget{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Namespace, req.Name)
			r.tallies.Forget(req.NamespacedName)
			r.written.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		r.tallies.Forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if r.written.Behind(req.NamespacedName, b.UID, b.ResourceVersion) {
		// Woken by a Machine's event before the cache has seen our last
		// status write: a recount written on this version would be
		// refused. The watch event of our write reconciles the budget
		// again (package ownwrites); the Machines noted wait for it. The
		// requeue is a backstop.
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	// The status lock: the gate records grants in this status under its
	// resourceVersion, and a recount from an older read must never write
	// over a grant it has not seen.
	w := patch.New(r.Client, b, patch.WithStatusLock())
	res, err := r.recount(ctx, b, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	read := b.ResourceVersion
	if err := w.PatchStatus(ctx, b); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if b.ResourceVersion != read {
		r.written.Wrote(req.NamespacedName, b.UID, []string{read}, b.ResourceVersion, false)
	}
	exportMetrics(b)
	return res, nil
}

// recount fills b's status from its tally; it asks to be called again
// when the oldest pending grant lapses, or for the tally's next full pass.
func (r *Reconciler) recount(ctx context.Context, b *v1alpha1.MachineDisruptionBudget, now time.Time) (reconcile.Result, error) {
	st := &b.Status
	st.ObservedGeneration = b.Generation
	ev, overlapping, fullAt, err := r.evaluate(ctx, b, now)
	var invalid specError
	if errors.As(err, &invalid) {
		// Only a budget written around admission gets here: it grants
		// nothing until fixed, and says why.
		st.ExpectedMachines, st.MaxUnavailable, st.CurrentUnavailable, st.DisruptionsAllowed = 0, 0, 0, 0
		st.WaitingMachines = nil
		r.setCondition(b, v1alpha1.DisruptionAllowedCondition, false, disruption.ReasonInvalidSpec,
			"the budget grants no disruption until its spec is fixed: "+invalid.Error(), now)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	st.ExpectedMachines, st.MaxUnavailable = ev.Expected, ev.Max
	st.CurrentUnavailable, st.DisruptionsAllowed = ev.Unavailable, ev.Allowed
	st.DisruptedMachines, st.WaitingMachines = ev.Disrupted, ev.Waiting
	switch {
	case ev.Expected == 0:
		r.setCondition(b, v1alpha1.DisruptionAllowedCondition, false, disruption.ReasonNoMachinesSelected,
			"spec.selector selects no Machine of namespace "+b.Namespace+": the budget bounds nothing", now)
	case ev.Allowed == 0:
		r.setCondition(b, v1alpha1.DisruptionAllowedCondition, false, disruption.ReasonBudgetExhausted,
			fmt.Sprintf("%d of %d selected Machines are unavailable, maxUnavailable %s (%d): voluntary disruptions wait (%s)",
				ev.Unavailable, ev.Expected, b.Spec.MaxUnavailable.String(), ev.Max, why(ev)), now)
	default:
		r.setCondition(b, v1alpha1.DisruptionAllowedCondition, true, disruption.ReasonDisruptionsAllowed,
			fmt.Sprintf("%d of %d selected Machines are unavailable, maxUnavailable %s (%d): %d more disruption(s) allowed",
				ev.Unavailable, ev.Expected, b.Spec.MaxUnavailable.String(), ev.Max, ev.Allowed), now)
	}
	r.overlap(b, overlapping, now)
	next := changed.FullPassIn(fullAt, now)
	if len(ev.Disrupted) > 0 {
		lapse := ev.Disrupted[0].GrantedAt.Add(disruption.GrantTTL).Sub(now)
		next = min(next, max(lapse, time.Second))
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// overlap sets the Overlapping condition: the other budgets selecting any
// of b's Machines (each must allow their disruption too).
func (r *Reconciler) overlap(b *v1alpha1.MachineDisruptionBudget, names []string, now time.Time) {
	if len(names) == 0 {
		r.setCondition(b, v1alpha1.OverlappingCondition, false, disruption.ReasonNoOverlap,
			"no other MachineDisruptionBudget selects any of this budget's Machines", now)
		return
	}
	r.setCondition(b, v1alpha1.OverlappingCondition, true, disruption.ReasonOverlapping,
		"some selected Machines are also selected by "+strings.Join(names, ", ")+": their disruptions wait until every budget selecting them allows one", now)
}

// why names up to five unavailable Machines and why, for the condition.
func why(ev disruption.Evaluation) string {
	names := make([]string, 0, len(ev.Why))
	for n := range ev.Why {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+" "+ev.Why[n])
	}
	return brief.List(parts, 5, "; ")
}

func (r *Reconciler) setCondition(b *v1alpha1.MachineDisruptionBudget, t string, ok bool, reason, message string, now time.Time) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message,
		ObservedGeneration: b.Generation, LastTransitionTime: metav1.NewTime(now)})
}
