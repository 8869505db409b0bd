package machine

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
)

// reconcilePreservation keeps the Preserved condition, status.preservedUntil
// and the Node's cordon, taint and autoscaler annotation in line with the
// preserve requests (docs/preservation.md). It runs on every reconcile of a
// Machine not being deleted, failed or not, after the steps that may fail
// it: a Machine that fails with preservation asked is written Failed and
// Preserved at once, so its owner never sees the one without the other.
// Everything it decides from is in the Machine's status and annotations
// and the Node's annotations: a restarted manager resumes unchanged.
func (r *Reconciler) reconcilePreservation(ctx context.Context, s *scope) (reconcile.Result, error) {
	m := s.machine
	node := s.node
	if node == nil && (m.Status.NodeRef != nil || m.Spec.ProviderID != "") {
		n, err := r.nodeOf(ctx, m)
		if err != nil {
			return reconcile.Result{}, err
		}
		if n != nil {
			if _, stale := staleNode(n, m); !stale {
				node = n
			}
		}
	}
	req := machinefacts.PreserveRequested(m, node)
	cond := s.condition(v1alpha1.PreservedCondition)
	wasPreserved := cond != nil && cond.Status == metav1.ConditionTrue
	var res reconcile.Result
	hold := false
	switch {
	case req.Invalid != "":
		if cond == nil || cond.Reason != v1alpha1.PreserveInvalidReason || cond.Message != req.Invalid {
			s.event(corev1.EventTypeWarning, v1alpha1.PreserveInvalidReason, req.Invalid+"; the Machine is not preserved")
		}
		s.setCondition(v1alpha1.PreservedCondition, metav1.ConditionFalse, v1alpha1.PreserveInvalidReason, req.Invalid+"; the Machine is not preserved")
		m.Status.PreservedUntil = nil
		if wasPreserved {
			s.event(corev1.EventTypeNormal, "PreservationEnded", "preservation ended: "+req.Invalid)
		}
	case req.Reason == "" && machinefacts.PreserveRequested(m, nil).Reason != "":
		// The Machine alone asks (its set's automatic mark) but its Node
		// says "false": a written False tells its MachineSet, which sees
		// only the Machine, that it is not held (machinefacts.Preserved).
		msg := "its Node " + node.Name + " has " + v1alpha1.PreserveAnnotation + "=" + v1alpha1.PreserveNever + "; the Machine is not preserved"
		s.setCondition(v1alpha1.PreservedCondition, metav1.ConditionFalse, v1alpha1.PreserveOptedOutReason, msg)
		m.Status.PreservedUntil = nil
		if wasPreserved {
			s.event(corev1.EventTypeNormal, "PreservationEnded", "preservation ended: "+msg)
		}
	case req.Reason == "":
		if wasPreserved {
			s.event(corev1.EventTypeNormal, "PreservationEnded", "preservation ended: no preserve request remains")
		}
		meta.RemoveStatusCondition(&m.Status.Conditions, v1alpha1.PreservedCondition)
		m.Status.PreservedUntil = nil
	case cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == v1alpha1.PreserveExpiredReason:
		// Expired: the request is ignored until removed, or the Machine
		// would be preserved again at once.
		m.Status.PreservedUntil = nil
	default:
		start := s.now
		if wasPreserved {
			start = cond.LastTransitionTime.Time
		}
		until := start.Add(s.life.preserveTimeout)
		if !s.now.Before(until) {
			msg := "the preserve timeout (" + s.life.preserveTimeout.String() + ") ended; remove the " + v1alpha1.PreserveAnnotation + " annotation to allow preserving it again"
			s.setCondition(v1alpha1.PreservedCondition, metav1.ConditionFalse, v1alpha1.PreserveExpiredReason, msg)
			m.Status.PreservedUntil = nil
			s.event(corev1.EventTypeNormal, "PreservationEnded", "preservation ended: "+msg)
			break
		}
		hold = true
		msg := req.Source + "; preserved until " + until.UTC().Format(time.RFC3339)
		if wasPreserved {
			// Keep the transition time: it is the start the timeout runs from.
			cond.Reason, cond.Message, cond.ObservedGeneration = req.Reason, msg, m.Generation
		} else {
			s.setCondition(v1alpha1.PreservedCondition, metav1.ConditionTrue, req.Reason, msg)
			s.event(corev1.EventTypeNormal, "PreservationStarted", msg)
		}
		t := metav1.NewTime(until)
		m.Status.PreservedUntil = &t
		res = requeue.Deadline(until.Sub(s.now))
	}
	if node == nil {
		return res, nil
	}
	changed := node.DeepCopy()
	if hold {
		holdNode(changed)
	} else {
		releaseNode(changed)
	}
	if equalPreservedNode(node, changed) {
		return res, nil
	}
	// Locked on the fields it changes (package patch), as syncNode.
	err := patch.New(r.Target, node).PatchObjectLocked(ctx, changed)
	if apierrors.IsConflict(err) {
		return requeue.Soonest(res, reconcile.Result{RequeueAfter: requeue.ConflictRetry}), nil
	}
	if err != nil {
		return res, client.IgnoreNotFound(err)
	}
	if s.node != nil {
		s.node = changed
	}
	return res, nil
}

// holdNode cordons and taints the Node of a preserved Machine and tells the
// cluster-autoscaler not to remove it, recording what it changed besides
// its own taint.
func holdNode(node *corev1.Node) {
	changes := preservedChanges(node)
	if !node.Spec.Unschedulable {
		node.Spec.Unschedulable = true
		changes = appendOnce(changes, v1alpha1.NodeChangeCordon)
	}
	if node.Annotations[v1alpha1.AutoscalerScaleDownDisabledAnnotation] != "true" {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[v1alpha1.AutoscalerScaleDownDisabledAnnotation] = "true"
		changes = appendOnce(changes, v1alpha1.NodeChangeScaleDownDisabled)
	}
	if len(changes) > 0 {
		node.Annotations[v1alpha1.NodePreservedChangesAnnotation] = strings.Join(changes, ",")
	}
	if !slices.ContainsFunc(node.Spec.Taints, isPreservedTaint) {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: v1alpha1.PreservedTaintKey, Effect: corev1.TaintEffectNoSchedule})
	}
}

// releaseNode undoes what holdNode changed, and only that: a cordon or an
// autoscaler annotation that was there before preservation stays.
func releaseNode(node *corev1.Node) {
	changes := preservedChanges(node)
	if slices.Contains(changes, v1alpha1.NodeChangeCordon) {
		node.Spec.Unschedulable = false
	}
	if slices.Contains(changes, v1alpha1.NodeChangeScaleDownDisabled) {
		delete(node.Annotations, v1alpha1.AutoscalerScaleDownDisabledAnnotation)
	}
	delete(node.Annotations, v1alpha1.NodePreservedChangesAnnotation)
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, isPreservedTaint)
	if len(node.Spec.Taints) == 0 {
		node.Spec.Taints = nil
	}
}

func isPreservedTaint(t corev1.Taint) bool { return t.Key == v1alpha1.PreservedTaintKey }

func preservedChanges(node *corev1.Node) []string {
	raw := node.Annotations[v1alpha1.NodePreservedChangesAnnotation]
	if raw == "" {
		return nil
	}
	return strings.Split(raw, ",")
}

func appendOnce(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

func equalPreservedNode(a, b *corev1.Node) bool {
	return a.Spec.Unschedulable == b.Spec.Unschedulable && equalNode(a, b)
}
