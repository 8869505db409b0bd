package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// guardName names the fleet's health check and disruption budget (-guards).
const guardName = "bench"

// budgetPercent is the guard budget's maxUnavailable: twice the rollout's
// maxSurge, so the budget is asked for every rollout deletion (a grant,
// written to its status) and holds one back only when a wave's deletions
// and its new Machines not yet Ready reach it together.
const budgetPercent = 2 * maxSurgePercent

// guards are a MachineHealthCheck and a MachineDisruptionBudget over the
// fleet, as a production fleet has them: with -guards, each scenario's
// figures include their controllers' work at every Machine event. The
// health check never remediates in a run: its Node conditions wait 5
// minutes and kwok keeps its Nodes Ready.
func guards() []client.Object {
	pool := v1alpha1.LabelSelector{MatchLabels: map[string]string{poolLabel: deploymentName}}
	timeout := metav1.Duration{Duration: 5 * time.Minute}
	return []client.Object{
		&v1alpha1.MachineHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: guardName},
			Spec: v1alpha1.MachineHealthCheckSpec{
				Selector: pool,
				Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
					{Type: string(corev1.NodeReady), Status: string(corev1.ConditionFalse), Timeout: timeout},
					{Type: string(corev1.NodeReady), Status: string(corev1.ConditionUnknown), Timeout: timeout},
				}},
			},
		},
		&v1alpha1.MachineDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: guardName},
			Spec: v1alpha1.MachineDisruptionBudgetSpec{
				Selector:       pool,
				MaxUnavailable: intstr.FromString(fmt.Sprintf("%d%%", budgetPercent)),
			},
		},
	}
}

// createGuards creates the guards and waits until both controllers have
// written a status, so their first full reads are not in a scenario's
// figures.
func (e *env) createGuards(ctx context.Context) error {
	for _, g := range guards() {
		if err := e.admin.Create(ctx, g); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", g, g.GetName(), err)
		}
	}
	key := client.ObjectKey{Namespace: benchNamespace, Name: guardName}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var mhc v1alpha1.MachineHealthCheck
		var mdb v1alpha1.MachineDisruptionBudget
		if err := e.admin.Get(ctx, key, &mhc); err != nil {
			return false, err
		}
		if err := e.admin.Get(ctx, key, &mdb); err != nil {
			return false, err
		}
		return mhc.Status.ObservedGeneration == mhc.Generation && mdb.Status.ObservedGeneration == mdb.Generation, nil
	})
}
