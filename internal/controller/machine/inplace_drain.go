package machine

import (
	"context"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
)

// inPlaceDrain cordons and drains the Node before anything changes on it.
// The drain is the deletion's (internal/drain: MachineDrainRules, volume
// waits) but never forced and never deletes a pod a disruption budget
// protects: an update that cannot drain runs into its updateTimeout and
// fails, and the Machine stays as it was, cordoned. Its progress lives in
// status.inPlaceUpdate.drain, so a restart resumes it.
func (r *Reconciler) inPlaceDrain(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	u := s.machine.Status.InPlaceUpdate
	if s.node == nil {
		u.Message = "the Machine has no Node to drain"
		return true, reconcile.Result{}, nil
	}
	// A previous update's answer (a failed agent) must not be read as
	// this one's: cleared here, at every step of the drain (a no-op once
	// done), so a failed write is retried rather than left.
	if err := r.clearNodeUpdateKeys(ctx, s); err != nil {
		return false, reconcile.Result{}, err
	}
	if err := r.cordonForUpdate(ctx, s); err != nil {
		return false, reconcile.Result{}, err
	}
	if u.Drain == nil {
		u.Drain = &v1alpha1.DrainStatus{}
	}
	rules, err := r.drainRules(ctx, s.machine)
	if err != nil {
		u.Message = "draining Node " + s.node.Name + ": " + err.Error()
		return false, reconcile.Result{RequeueAfter: r.Config.BackoffBase}, nil
	}
	var volumeIDs func(context.Context, []*corev1.PersistentVolumeSpec) ([]string, error)
	if infra, err := r.infrastructureFor(ctx, s); err == nil && infra != nil {
		volumeIDs = infra.volumeIDs
	}
	result, err := drain.Step(ctx, r.TargetAPI, u.Drain, drain.Options{
		NodeName: s.node.Name,
		// A budget's refusal is waited out, never overridden: an update
		// is not worth an outage (the updateTimeout ends the wait).
		MaxEvictRetries:     math.MaxInt32,
		VolumeDetachTimeout: r.Config.VolumeDetachTimeout,
		RetryInterval:       r.Config.EvictionRetryInterval,
		VolumeIDs:           volumeIDs,
		Rules:               rules,
		Now:                 func() time.Time { return s.now },
	})
	if err != nil {
		u.Message = "draining Node " + s.node.Name + ": " + err.Error()
		return false, reconcile.Result{RequeueAfter: r.Config.BackoffBase}, nil
	}
	if !result.Done {
		u.Message = "draining Node " + s.node.Name + ": " + result.Message
		s.setCondition(v1alpha1.InPlaceUpdateCondition, metav1.ConditionUnknown, ReasonInPlaceUpdating, string(u.Phase)+": "+u.Message)
		return false, reconcile.Result{RequeueAfter: result.RequeueAfter}, nil
	}
	return true, reconcile.Result{}, nil
}

// cordonForUpdate cordons the Node and records, in the same write, that
// this controller did: only then is the cordon undone when the update
// ends. A Node already cordoned (by a person, by preservation) is left as
// it is, and stays cordoned afterwards. The write carries the Node's
// resourceVersion, so a cordon someone sets meanwhile is never taken for
// ours.
func (r *Reconciler) cordonForUpdate(ctx context.Context, s *scope) error {
	if s.node.Spec.Unschedulable {
		return nil
	}
	return r.patchNode(ctx, s, func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.NodeInPlaceCordonAnnotation] = "true"
	})
}
