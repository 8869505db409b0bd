package machinedeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// reasonWaitingForBudget is the reason of the deployment's
// DisruptionAllowed condition and Warning Event while an in-place start
// waits for a MachineDisruptionBudget.
const reasonWaitingForBudget = "WaitingForDisruptionBudget"

// admitStarts asks the MachineDisruptionBudgets for the in-place updates
// the plan starts (docs/disruption-budgets.md), before any of their writes:
// the start of one Machine is its old set's write, the new set's write and
// its target, and a start the budget refuses must leave none of them. When
// some are held back it plans again with only the granted ones admitted
// (plan.InPlaceSettings.Admitted): the same candidates in the same order,
// cut where the gate stopped, so the new plan starts exactly the granted
// Machines. A Conflict (another controller took a disruption in between)
// gives the plan of what was granted, and again: ask soon for the rest.
func (r *Reconciler) admitStarts(ctx context.Context, s *scope, in plan.Input, p plan.Result) (_ plan.Result, again bool, _ error) {
	s.budgetAsked = true
	if p.InPlace == nil || len(p.InPlace.Started) == 0 {
		return p, false, nil
	}
	var machines []*v1alpha1.Machine
	for _, name := range p.InPlace.Started {
		if m := s.machine(name); m != nil {
			machines = append(machines, m)
		}
	}
	granted, d, err := r.Gate.Admit(ctx, machines, v1alpha1.DisruptionInPlaceUpdate)
	again = apierrors.IsConflict(err)
	if err != nil && !again {
		return p, false, err
	}
	if len(granted) == len(p.InPlace.Started) {
		return p, again, nil
	}
	if !d.Allowed && d.Message != "" {
		held := machines[len(granted)]
		s.budgetWait = fmt.Sprintf("%d in-place update(s) wait, first Machine %s: %s", len(machines)-len(granted), held.Name, d.Message)
	}
	admitted := make(map[string]bool, len(granted))
	for _, m := range granted {
		admitted[m.Name] = true
	}
	settings := *in.InPlace
	settings.Admitted = admitted
	in.InPlace = &settings
	q := plan.Plan(in)
	started := map[string]bool{}
	if q.InPlace != nil {
		for _, name := range q.InPlace.Started {
			started[name] = true
		}
	}
	// By construction every granted Machine starts; one that does not
	// gives its grant back rather than hold the budget for two minutes.
	for _, m := range granted {
		if !started[m.Name] {
			if err := r.Gate.Withdraw(ctx, m, v1alpha1.DisruptionInPlaceUpdate); err != nil {
				return q, again, err
			}
		}
	}
	return q, again, nil
}

// releaseUnwanted gives back the in-place updates the deployment waited
// for and no longer wants to start: the strategy is no longer InPlace,
// the Machine's set is the new one, or it is on its way already.
// Otherwise the Machine keeps saying it waits, and the budget lists it.
// Only InPlaceUpdate waits: another kind on the same Machine is another
// controller's.
func (r *Reconciler) releaseUnwanted(ctx context.Context, s *scope, inPlace bool) error {
	for _, ms := range s.sets {
		for _, m := range s.machines[ms.UID] {
			kind, waits := disruption.Waiting(m)
			if !waits || kind != v1alpha1.DisruptionInPlaceUpdate || !m.DeletionTimestamp.IsZero() {
				continue
			}
			wanted := inPlace && ms != s.newSet && ms.DeletionTimestamp.IsZero() && m.Annotations[v1alpha1.InPlaceTargetAnnotation] == ""
			if wanted {
				continue
			}
			if err := r.Gate.Withdraw(ctx, m, v1alpha1.DisruptionInPlaceUpdate); err != nil {
				return err
			}
			s.log.Info("released an in-place update no longer wanted", "machine", m.Name)
		}
	}
	return nil
}

// setBudgetWait says on the deployment's DisruptionAllowed condition, and
// in a Warning Event when it starts waiting, which in-place starts wait
// for a budget; the condition goes when none waits.
func (s *scope) setBudgetWait() {
	if !s.budgetAsked {
		return // no in-place plan this time: as it was
	}
	st := &s.md.Status
	if s.budgetWait == "" {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.DisruptionAllowedCondition)
		return
	}
	if meta.FindStatusCondition(st.Conditions, v1alpha1.DisruptionAllowedCondition) == nil {
		s.event(corev1.EventTypeWarning, reasonWaitingForBudget, s.budgetWait)
	}
	s.setCondition(v1alpha1.DisruptionAllowedCondition, metav1.ConditionFalse, reasonWaitingForBudget, s.budgetWait)
}
