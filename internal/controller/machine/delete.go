package machine

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// nextStep orders the deletion steps.
var nextStep = map[v1alpha1.DeletionStep]v1alpha1.DeletionStep{
	v1alpha1.StepPreDrainHooks:        v1alpha1.StepCordon,
	v1alpha1.StepCordon:               v1alpha1.StepDrain,
	v1alpha1.StepDrain:                v1alpha1.StepPreTerminateHooks,
	v1alpha1.StepPreTerminateHooks:    v1alpha1.StepDeleteInfrastructure,
	v1alpha1.StepDeleteInfrastructure: v1alpha1.StepDeleteNode,
}

// reconcileDelete runs the deletion steps in order, as far as each allows
// in this reconcile. The step in progress and its start time live in
// status.deletion, so after a restart the same step resumes: the drain is
// never skipped and the Node is never deleted before it was drained.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (reconcile.Result, error) {
	m := s.machine
	if !controllerutil.ContainsFinalizer(m, v1alpha1.MachineFinalizer) {
		s.gone = true
		return reconcile.Result{}, nil
	}
	if m.Status.Deletion == nil {
		m.Status.Deletion = &v1alpha1.MachineDeletionStatus{
			Step: v1alpha1.StepPreDrainHooks, StartTime: metav1.NewTime(s.now), StepStartTime: metav1.NewTime(s.now),
		}
		s.operation(v1alpha1.OperationDelete, v1alpha1.OperationProcessing, "", "deletion started")
	}
	node, err := r.nodeOf(ctx, m)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node != nil {
		if _, stale := staleNode(node, m); !stale {
			s.node = node
		}
	}

	for {
		d := m.Status.Deletion
		done, res, err := r.deletionStep(ctx, s, d.Step)
		if err != nil || !done {
			return res, err
		}
		if d.Step == v1alpha1.StepDeleteNode {
			return r.removeFinalizer(ctx, s)
		}
		d.Step = nextStep[d.Step]
		d.StepStartTime = metav1.NewTime(s.now)
		if d.Step == v1alpha1.StepDeleteInfrastructure {
			// Record the step before the slow, irreversible driver call, so
			// people — and a manager restarted mid-call — see where it is,
			// and so the drain is recorded before the Node can go. The
			// Events of the steps done so far wait for the reconcile's end:
			// one summary Event (see deleteNode), not one per write.
			s.operation(v1alpha1.OperationDelete, v1alpha1.OperationProcessing, "", "deleting the VM "+m.Spec.ProviderID)
			held := s.succeeded
			s.succeeded = succeededOps{}
			err := s.checkpoint(ctx)
			s.succeeded = held
			if err != nil {
				return reconcile.Result{}, err
			}
		}
	}
}

func (r *Reconciler) deletionStep(ctx context.Context, s *scope, step v1alpha1.DeletionStep) (bool, reconcile.Result, error) {
	switch step {
	case v1alpha1.StepPreDrainHooks:
		return r.waitForHooks(s, v1alpha1.PreDrainHookAnnotationPrefix, "pre-drain"), reconcile.Result{}, nil
	case v1alpha1.StepCordon:
		return r.cordon(ctx, s)
	case v1alpha1.StepDrain:
		return r.drainStep(ctx, s)
	case v1alpha1.StepPreTerminateHooks:
		return r.waitForHooks(s, v1alpha1.PreTerminateHookAnnotationPrefix, "pre-terminate"), reconcile.Result{}, nil
	case v1alpha1.StepDeleteInfrastructure:
		return r.deleteInfrastructure(ctx, s)
	case v1alpha1.StepDeleteNode:
		return r.deleteNode(ctx, s)
	}
	return false, reconcile.Result{}, fmt.Errorf("unknown deletion step %q", step)
}

// waitForHooks holds the deletion while a hook annotation with prefix is
// present; its removal is a Machine update, which reconciles again.
func (r *Reconciler) waitForHooks(s *scope, prefix, what string) bool {
	var hooks []string
	for k := range s.machine.Annotations {
		if strings.HasPrefix(k, prefix) {
			hooks = append(hooks, strings.TrimPrefix(k, prefix))
		}
	}
	if len(hooks) == 0 {
		return true
	}
	s.operation(v1alpha1.OperationDelete, v1alpha1.OperationProcessing, "", "waiting for "+what+" hooks: "+strings.Join(hooks, ", "))
	return false
}

// cordon marks the Node unschedulable. While the target cluster cannot be
// reached it retries until the drain timeout, counted from the step's
// start, and then goes on to the drain, which has the same bound (see
// drainStep): a cluster that is gone must not hold the Machine forever.
func (r *Reconciler) cordon(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	if s.node == nil {
		return true, reconcile.Result{}, nil
	}
	// From the Node as the cache has it: a read of the Node per deletion
	// fewer. The patch sets the one field whatever the Node's version.
	err := drain.CordonNode(ctx, r.TargetAPI, s.node)
	if err == nil || !targetUnreachable(err) {
		return err == nil, reconcile.Result{}, err
	}
	deadline := s.machine.Status.Deletion.StepStartTime.Add(s.life.drainTimeout)
	if s.now.Before(deadline) {
		s.operation(v1alpha1.OperationDrain, v1alpha1.OperationFailed, "", "cordoning Node "+s.node.Name+": "+err.Error())
		wait := backoff(s.machine.Status.LastOperation.FailureCount, r.Config.BackoffBase, r.Config.BackoffCap)
		return false, reconcile.Result{RequeueAfter: min(wait, until(s.now, deadline))}, nil
	}
	s.event(corev1.EventTypeWarning, "CordonSkipped", fmt.Sprintf(
		"could not cordon Node %s within the drain timeout of %s, its cluster cannot be reached: %v", s.node.Name, s.life.drainTimeout, err))
	return true, reconcile.Result{}, nil
}

func (r *Reconciler) drainStep(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	d := s.machine.Status.Deletion
	if s.node == nil {
		s.setCondition(v1alpha1.DrainedCondition, metav1.ConditionTrue, "NoNode", "the Machine has no Node to drain")
		return true, reconcile.Result{}, nil
	}
	if d.Drain == nil {
		d.Drain = &v1alpha1.DrainStatus{}
	}
	if d.ForceReason == "" {
		d.ForceReason = r.forceReason(s)
		if d.ForceReason != "" {
			s.event(corev1.EventTypeWarning, "ForceDrain", "draining Node "+s.node.Name+" by force: "+d.ForceReason)
		}
	}
	rules, err := r.drainRules(ctx, s.machine)
	if err != nil {
		s.operation(v1alpha1.OperationDrain, v1alpha1.OperationFailed, "", "draining Node "+s.node.Name+": "+err.Error())
		return false, reconcile.Result{RequeueAfter: r.Config.BackoffBase}, nil
	}
	var volumeIDs func(context.Context, []*corev1.PersistentVolumeSpec) ([]string, error)
	if infra, err := r.infrastructureFor(ctx, s); err == nil && infra != nil {
		volumeIDs = infra.volumeIDs
	}
	result, err := drain.Step(ctx, r.TargetAPI, d.Drain, drain.Options{
		NodeName:            s.node.Name,
		Force:               d.ForceReason != "",
		MaxEvictRetries:     s.life.maxEvictRetries,
		VolumeDetachTimeout: r.Config.VolumeDetachTimeout,
		RetryInterval:       r.Config.EvictionRetryInterval,
		VolumeIDs:           volumeIDs,
		Rules:               rules,
		Now:                 func() time.Time { return s.now },
	})
	// How long the cluster has been unreachable lives in status, so that a
	// restart neither forgets nor restarts it; any answer resets it.
	if !targetUnreachable(err) {
		d.Drain.UnreachableSince = nil
	} else if d.Drain.UnreachableSince == nil {
		d.Drain.UnreachableSince = ptr.To(metav1.NewTime(s.now))
	}
	if err != nil && d.ForceReason != "" && d.Drain.UnreachableSince != nil &&
		!s.now.Before(d.Drain.UnreachableSince.Add(s.life.drainTimeout)) {
		// Forced, and the Node's cluster has not been reachable for the
		// drain timeout to delete its pods: they go with the VM, as a
		// forced drain's would. A shorter outage (an API server upgrade)
		// only delays the drain.
		msg := fmt.Sprintf("skipped the forced drain of Node %s, its cluster cannot be reached since %s: %v",
			s.node.Name, d.Drain.UnreachableSince.UTC().Format(time.RFC3339), err)
		s.setCondition(v1alpha1.DrainedCondition, metav1.ConditionFalse, "TargetUnreachable", msg)
		s.event(corev1.EventTypeWarning, "DrainSkipped", msg)
		return true, reconcile.Result{}, nil
	}
	if err != nil {
		s.operation(v1alpha1.OperationDrain, v1alpha1.OperationFailed, "", "draining Node "+s.node.Name+": "+err.Error())
		requeue := r.Config.BackoffBase
		if d.ForceReason == "" {
			requeue = min(requeue, until(s.now, gracefulUntil(s)))
		}
		if d.Drain.UnreachableSince != nil {
			requeue = min(requeue, until(s.now, d.Drain.UnreachableSince.Add(s.life.drainTimeout)))
		}
		return false, reconcile.Result{RequeueAfter: requeue}, nil
	}
	if !result.Done {
		s.operation(v1alpha1.OperationDrain, v1alpha1.OperationProcessing, "", "draining Node "+s.node.Name+": "+result.Message)
		s.setCondition(v1alpha1.DrainedCondition, metav1.ConditionFalse, "Draining", result.Message)
		requeue := result.RequeueAfter
		if d.ForceReason == "" {
			// Wake up exactly when the drain timeout or the
			// interruption's deadline forces the drain.
			requeue = min(requeue, until(s.now, gracefulUntil(s)))
		}
		return false, reconcile.Result{RequeueAfter: requeue}, nil
	}
	s.operation(v1alpha1.OperationDrain, v1alpha1.OperationSucceeded, "", "drained Node "+s.node.Name)
	s.setCondition(v1alpha1.DrainedCondition, metav1.ConditionTrue, "Drained", "drained Node "+s.node.Name)
	observeDrain(s.now.Sub(d.StepStartTime.Time))
	return true, reconcile.Result{}, nil
}

// drainRules returns the MachineDrainRules of the Machine's namespace that
// select it, in the order the drain applies them (docs/drain.md).
func (r *Reconciler) drainRules(ctx context.Context, m *v1alpha1.Machine) ([]drain.Rule, error) {
	return drain.MachineRules(ctx, r.Client, m)
}

// gracefulUntil is when a graceful drain is forced: at the drain timeout,
// or earlier at the deadline of an interruption (docs/interruptions.md).
func gracefulUntil(s *scope) time.Time {
	forced := s.machine.Status.Deletion.StepStartTime.Add(s.life.drainTimeout)
	if at := s.machine.Status.InterruptionDeadline; at != nil && at.Time.Before(forced) {
		return at.Time
	}
	return forced
}

// forceReason says why the drain must be forced, or "" for a graceful one.
func (r *Reconciler) forceReason(s *scope) string {
	d := s.machine.Status.Deletion
	if v := s.machine.Annotations[v1alpha1.ForceDeletionAnnotation]; strings.EqualFold(v, "true") {
		return "the Machine is annotated " + v1alpha1.ForceDeletionAnnotation + "=true"
	}
	if s.now.Sub(d.StepStartTime.Time) >= s.life.drainTimeout {
		return fmt.Sprintf("the drain timeout of %s passed", s.life.drainTimeout)
	}
	if at := s.machine.Status.InterruptionDeadline; at != nil && !s.now.Before(at.Time) {
		// The provider takes the VM away now: the pods go with it
		// either way (docs/interruptions.md).
		return "its provider's interruption deadline " + at.UTC().Format(time.RFC3339) + " passed"
	}
	if c := nodeReady(s.node); c != nil && c.Status != corev1.ConditionTrue &&
		s.now.Sub(c.LastTransitionTime.Time) >= r.Config.UnreachableForceDrainAfter {
		return fmt.Sprintf("Node %s has not been Ready for more than %s", s.node.Name, r.Config.UnreachableForceDrainAfter)
	}
	return ""
}

func (r *Reconciler) deleteInfrastructure(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	if wait := r.retryWait(s); wait > 0 && s.machine.Status.LastOperation.Type == v1alpha1.OperationDelete {
		return false, reconcile.Result{RequeueAfter: wait}, nil
	}
	infra, err := r.infrastructureFor(ctx, s)
	if err != nil {
		return false, reconcile.Result{}, err
	}
	vm := "VM deleted"
	switch {
	case infra == nil && r.createNeverStarted(s):
		// Its class never existed while it did: no VM was ever made
		// (docs/machine-phases.md, "A class that is not there").
		vm = "no VM to delete (no create was ever started: its class is not found)"
	case infra == nil:
		// The class or driver is gone: the VM cannot be deleted, and it must
		// not be forgotten. The conditions say why; a person decides.
		s.operation(v1alpha1.OperationDelete, v1alpha1.OperationFailed, driver.FailedPrecondition.String(),
			"cannot delete the VM: "+s.condition(v1alpha1.InfrastructureReadyCondition).Message)
		return false, reconcile.Result{RequeueAfter: r.Config.LongBackoffBase}, nil
	default:
		done, res, err := infra.delete(ctx, s)
		if !done || err != nil {
			return done, res, err
		}
	}
	// The bootstrap provider's object goes with the infrastructure, before
	// the Node (docs/contract-providers.md).
	if done, res, err := r.deleteExternal(ctx, s, s.machine.Spec.Bootstrap.ConfigRef); !done || err != nil {
		return done, res, err
	}
	s.operation(v1alpha1.OperationDelete, v1alpha1.OperationProcessing, "", vm+"; deleting the Node")
	return true, reconcile.Result{}, nil
}

// deleteNode deletes the Node, the last step: the VM is gone. When the
// target cluster cannot be reached, it retries until the node deletion
// timeout (measured from the step's start) and then lets the Machine go
// without it, with a Warning Event: the Node object is all that is left,
// and a Machine must not hang forever on a cluster that is gone. Any
// other error (the cluster answered) retries forever.
func (r *Reconciler) deleteNode(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	if s.node == nil {
		return true, reconcile.Result{}, nil
	}
	err := r.deleteNodeObjects(ctx, s)
	if err == nil {
		// A routine deletion emits no Event (see routineOps); one that
		// got over a failure in this reconcile says so in its summary
		// Event (see emitSucceeded), which names the Node too.
		if s.succeeded.reason != "" {
			s.succeeded.reason = "NodeDeleted"
			s.succeeded.descriptions = append(s.succeeded.descriptions, "deleted Node "+s.node.Name)
		}
		return true, reconcile.Result{}, nil
	}
	timeout := s.life.nodeDeletionTimeout
	if timeout <= 0 || !targetUnreachable(err) {
		// An answer such as Forbidden (missing RBAC), a webhook's denial
		// or a VolumeAttachment that cannot be released is not an outage:
		// giving up would hide it and leave the Node behind. The error
		// stays in status.lastOperation until someone fixes it.
		s.operation(v1alpha1.OperationDelete, v1alpha1.OperationFailed, "", fmt.Sprintf("deleting Node %s: %v", s.node.Name, err))
		wait := backoff(s.machine.Status.LastOperation.FailureCount, r.Config.BackoffBase, r.Config.BackoffCap)
		return false, reconcile.Result{RequeueAfter: wait}, nil
	}
	deadline := s.machine.Status.Deletion.StepStartTime.Add(timeout)
	if s.now.Before(deadline) {
		s.operation(v1alpha1.OperationDelete, v1alpha1.OperationFailed, "",
			fmt.Sprintf("deleting Node %s: %v (the Machine goes without it after the node deletion timeout of %s)", s.node.Name, err, timeout))
		wait := backoff(s.machine.Status.LastOperation.FailureCount, r.Config.BackoffBase, r.Config.BackoffCap)
		return false, reconcile.Result{RequeueAfter: min(wait, until(s.now, deadline))}, nil
	}
	s.event(corev1.EventTypeWarning, "NodeDeletionTimedOut", fmt.Sprintf(
		"gave up deleting Node %s after the node deletion timeout of %s; its VM is gone, delete the Node by hand if its cluster comes back: %v",
		s.node.Name, timeout, err))
	return true, reconcile.Result{}, nil
}

// deleteNodeObjects deletes the Node and releases its VolumeAttachments.
func (r *Reconciler) deleteNodeObjects(ctx context.Context, s *scope) error {
	// The VM is gone: nothing can write to the Node's volumes any more.
	released, err := drain.ReleaseVolumeAttachments(ctx, r.TargetAPI, s.node.Name)
	if released > 0 {
		s.event(corev1.EventTypeNormal, "VolumesReleased", fmt.Sprintf("deleted %d VolumeAttachment(s) of Node %s, whose VM is gone", released, s.node.Name))
	}
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(r.Target.Delete(ctx, s.node))
}

func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) (reconcile.Result, error) {
	if _, err := s.setFinalizer(ctx, true); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	s.log.Info("machine deleted")
	s.gone = true
	return reconcile.Result{}, nil
}
