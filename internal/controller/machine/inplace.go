package machine

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
)

// The reasons of the InPlaceUpdate condition and of the in-place Events.
const (
	// ReasonInPlaceUpdating: the update runs (the condition's message says which phase).
	ReasonInPlaceUpdating = "InPlaceUpdating"
	// ReasonInPlaceSucceeded: the update was applied and the Machine moved to its target set.
	ReasonInPlaceSucceeded = "InPlaceUpdateSucceeded"
	// ReasonInPlaceFailed: the update failed or timed out; the Machine stays cordoned in its set.
	ReasonInPlaceFailed = "InPlaceUpdateFailed"
	// ReasonInPlaceRefused: the driver cannot make the change in place; the Machine is replaced.
	ReasonInPlaceRefused = "InPlaceUpdateRefused"
	// ReasonInPlaceCleared: the target annotation was removed before the update succeeded.
	ReasonInPlaceCleared = "InPlaceUpdateCleared"
)

// DefaultUpdateTimeout bounds an in-place update whose target set has no
// MachineDeployment saying otherwise (strategy.inPlace.updateTimeout).
const DefaultUpdateTimeout = 20 * time.Minute

// reconcileInPlace carries out the in-place update the MachineDeployment
// controller asked for with InPlaceTargetAnnotation: drain the Node, have
// the driver apply the target class, have the node agent run the target
// version, then move the Machine into the target set
// (docs/in-place-updates.md, "What the machine controller does").
// Every phase is recorded in status.inPlaceUpdate before it acts, so a
// restarted manager resumes where the old one stopped.
func (r *Reconciler) reconcileInPlace(ctx context.Context, s *scope) (reconcile.Result, error) {
	m := s.machine
	target := m.Annotations[v1alpha1.InPlaceTargetAnnotation]
	if target == "" {
		return r.inPlaceIdle(ctx, s)
	}
	if u := m.Status.InPlaceUpdate; u == nil || u.TargetSet != target {
		if err := r.startInPlace(ctx, s, target); err != nil || s.stop {
			return reconcile.Result{}, err
		}
	}
	for {
		u := m.Status.InPlaceUpdate
		switch u.Phase {
		case v1alpha1.InPlaceSucceeded:
			return r.moveToTarget(ctx, s)
		case v1alpha1.InPlaceFailed, v1alpha1.InPlaceRefused:
			// Terminal for this target: the orchestration undoes or
			// replaces; a person retries by removing the annotation.
			return reconcile.Result{}, nil
		}
		deadline := u.StartedAt.Add(r.updateTimeout(ctx, m.Namespace, u.TargetSet))
		if !s.now.Before(deadline) {
			r.endInPlace(s, v1alpha1.InPlaceFailed, fmt.Sprintf("timed out after %s in phase %s: %s",
				deadline.Sub(u.StartedAt.Time), u.Phase, u.Message))
			return reconcile.Result{}, nil
		}
		var (
			done bool
			res  reconcile.Result
			err  error
		)
		switch u.Phase {
		case v1alpha1.InPlaceDraining:
			done, res, err = r.inPlaceDrain(ctx, s)
		case v1alpha1.InPlaceUpdating:
			done, res, err = r.inPlaceDriver(ctx, s)
		case v1alpha1.InPlaceWaitingForNode:
			done, res, err = r.inPlaceNode(ctx, s)
		default:
			return reconcile.Result{}, fmt.Errorf("unknown in-place update phase %q", u.Phase)
		}
		// A write of the Machine in the phase (the last-applied spec)
		// replaced its status with a copy: go on with that one.
		u = m.Status.InPlaceUpdate
		switch {
		case err != nil:
			return res, err
		case u.Phase == v1alpha1.InPlaceFailed || u.Phase == v1alpha1.InPlaceRefused:
			return reconcile.Result{}, nil
		case !done:
			// Woken by the Node or the Machine changing; at the timeout at the latest.
			left := until(s.now, deadline)
			return reconcile.Result{RequeueAfter: min(nonZero(res.RequeueAfter, left), left)}, nil
		}
		r.advanceInPlace(s, u)
		// Status first, then act: the phase is recorded before its
		// driver call or Node write, so a restart resumes it.
		if err := s.checkpoint(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
}

// nonZero returns d, or fallback when d is zero.
func nonZero(d, fallback time.Duration) time.Duration {
	if d == 0 {
		return fallback
	}
	return d
}

// advanceInPlace moves the update to its next phase.
func (r *Reconciler) advanceInPlace(s *scope, u *v1alpha1.InPlaceUpdateStatus) {
	switch u.Phase {
	case v1alpha1.InPlaceDraining:
		u.Phase, u.Drain = v1alpha1.InPlaceUpdating, nil
		u.Message = "drained; applying MachineClass " + brief.OrNone(u.Class) + " to the VM where it differs"
	case v1alpha1.InPlaceUpdating:
		u.Phase = v1alpha1.InPlaceWaitingForNode
		u.Message = "the VM has MachineClass " + brief.OrNone(u.Class) + "; the Node is to run version " + brief.OrNone(u.Version)
	case v1alpha1.InPlaceWaitingForNode:
		u.Phase = v1alpha1.InPlaceSucceeded
		u.FinishedAt = &metav1.Time{Time: r.now()} // the reconcile's clock may be a driver call behind
		u.Message = fmt.Sprintf("updated in place in %s; moving to MachineSet %s", u.FinishedAt.Sub(u.StartedAt.Time).Round(time.Second), u.TargetSet)
		s.setCondition(v1alpha1.InPlaceUpdateCondition, metav1.ConditionTrue, ReasonInPlaceSucceeded, u.Message)
		return
	}
	s.setCondition(v1alpha1.InPlaceUpdateCondition, metav1.ConditionUnknown, ReasonInPlaceUpdating, string(u.Phase)+": "+u.Message)
}

// startInPlace records a new update towards target, from the target set's
// template, and writes it before anything is done to the Node or the VM.
func (r *Reconciler) startInPlace(ctx context.Context, s *scope, target string) error {
	m := s.machine
	set, err := r.machineSet(ctx, m.Namespace, target)
	if err != nil {
		return err
	}
	u := &v1alpha1.InPlaceUpdateStatus{TargetSet: target, StartedAt: &metav1.Time{Time: s.now}, Phase: v1alpha1.InPlaceDraining}
	m.Status.InPlaceUpdate = u
	if set == nil {
		r.endInPlace(s, v1alpha1.InPlaceFailed, "the target MachineSet "+target+" does not exist or is being deleted")
		return s.checkpoint(ctx)
	}
	tpl := set.Spec.Template.Spec
	if tpl.Class != nil {
		u.Class = tpl.Class.Name
	}
	u.Version = tpl.Version
	u.Message = "draining the Node"
	if why := structuralRefusal(m, &tpl); why != "" {
		r.endInPlace(s, v1alpha1.InPlaceRefused, why)
		return s.checkpoint(ctx)
	}
	s.setCondition(v1alpha1.InPlaceUpdateCondition, metav1.ConditionUnknown, ReasonInPlaceUpdating, string(u.Phase)+": "+u.Message)
	s.event(corev1.EventTypeNormal, "InPlaceUpdateStarted", fmt.Sprintf("updating in place to MachineSet %s (class %s, version %s)",
		target, brief.OrNone(u.Class), brief.OrNone(u.Version)))
	// Status first: a restart resumes from it, and the Node is cordoned
	// (and a previous update's keys cleared, inPlaceDrain) only by an
	// update that is recorded.
	return s.checkpoint(ctx)
}

// structuralRefusal says why the target template cannot be applied to the
// Machine in place whatever the driver says, or "".
func structuralRefusal(m *v1alpha1.Machine, tpl *v1alpha1.MachineSpec) string {
	switch {
	case m.Spec.Class != nil && tpl.Class == nil:
		return "the target template uses a provider's infrastructure object instead of a MachineClass; only a new Machine can switch"
	case m.Spec.Class == nil && tpl.Class != nil:
		return "the Machine's VM is a provider's infrastructure object; only a new Machine can switch to MachineClass " + tpl.Class.Name
	}
	return ""
}

// endInPlace ends the update as Failed or Refused: condition, Event and
// metric. The Machine stays cordoned in its set; the annotation stays and
// names the target that failed.
func (r *Reconciler) endInPlace(s *scope, phase v1alpha1.InPlaceUpdatePhase, message string) {
	u := s.machine.Status.InPlaceUpdate
	u.Phase, u.Drain, u.Message = phase, nil, brief.Truncate(message, 1024)
	u.FinishedAt = &metav1.Time{Time: r.now()} // the reconcile's clock may be a driver call behind
	reason, event := ReasonInPlaceFailed, "in-place update to MachineSet "+u.TargetSet+" failed: "+message
	if phase == v1alpha1.InPlaceRefused {
		reason, event = ReasonInPlaceRefused, "replaced: "+message
	}
	s.setCondition(v1alpha1.InPlaceUpdateCondition, metav1.ConditionFalse, reason, u.Message)
	s.event(corev1.EventTypeWarning, reason, event)
	s.log.Info("in-place update ended", "phase", phase, "target", u.TargetSet, "message", message)
	observeInPlaceUpdate(phase, u.FinishedAt.Sub(u.StartedAt.Time))
}

// inPlaceIdle is a Machine without a target: after a move, or after a
// person removed the annotation of an update that failed (a retry) or
// still ran (abandoned). Only what this controller did is undone: its own
// cordon and the Node's update keys — and only on the Node of a Machine
// that had an update, so keys a person or a test puts on another Node for
// its agent are left alone. The Node first: the status is cleared once
// the Node is released, so a failed write is tried again.
func (r *Reconciler) inPlaceIdle(ctx context.Context, s *scope) (reconcile.Result, error) {
	m := s.machine
	u := m.Status.InPlaceUpdate
	ours := s.node != nil && s.node.Annotations[v1alpha1.NodeInPlaceCordonAnnotation] != ""
	if u == nil && !ours {
		return reconcile.Result{}, nil
	}
	if err := r.releaseNodeFromUpdate(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if u != nil && u.Phase != v1alpha1.InPlaceSucceeded {
		s.event(corev1.EventTypeNormal, ReasonInPlaceCleared, fmt.Sprintf(
			"the %s annotation was removed: the in-place update to MachineSet %s (%s) is cleared and the Node uncordoned",
			v1alpha1.InPlaceTargetAnnotation, u.TargetSet, u.Phase))
		m.Status.InPlaceUpdate = nil
		meta.RemoveStatusCondition(&m.Status.Conditions, v1alpha1.InPlaceUpdateCondition)
	}
	return reconcile.Result{}, nil
}

// machineSet reads a MachineSet from the cache, and from the API server
// when the cache does not have it yet (the orchestration creates a set
// just before it names it as a target); nil when it does not exist or is
// being deleted.
func (r *Reconciler) machineSet(ctx context.Context, namespace, name string) (*v1alpha1.MachineSet, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	set := &v1alpha1.MachineSet{}
	err := r.Client.Get(ctx, key, set)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, set)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !set.DeletionTimestamp.IsZero() {
		// Going away with its Machines: no target to update to or move into.
		return nil, nil
	}
	return set, nil
}

// updateTimeout is strategy.inPlace.updateTimeout of the MachineDeployment
// owning the target set, DefaultUpdateTimeout without one.
func (r *Reconciler) updateTimeout(ctx context.Context, namespace, target string) time.Duration {
	set := &v1alpha1.MachineSet{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: target}, set); err != nil {
		return DefaultUpdateTimeout
	}
	owner := metav1.GetControllerOf(set)
	if owner == nil || owner.Kind != "MachineDeployment" {
		return DefaultUpdateTimeout
	}
	md := &v1alpha1.MachineDeployment{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: owner.Name}, md); err != nil {
		return DefaultUpdateTimeout
	}
	if p := md.Spec.Strategy.InPlace; p != nil && p.UpdateTimeout != nil && p.UpdateTimeout.Duration > 0 {
		return p.UpdateTimeout.Duration
	}
	return DefaultUpdateTimeout
}
