package machine

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
)

// inPlaceNode hands the target version to the Node's agent when the Node
// does not run it: labels NodeUpdateLabel=ready and
// NodeUpdateVersionLabel=<version>. The agent answers on the same label
// (docs/in-place-updates.md); the update is done once it says succeeded
// and the Node is Ready and reports the version as its kubeletVersion,
// and fails when it says failed (with its message). The Node's changes
// wake the Machine; the updateTimeout bounds the wait.
func (r *Reconciler) inPlaceNode(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	u := s.machine.Status.InPlaceUpdate
	want := u.Version
	if want == "" {
		return true, reconcile.Result{}, nil
	}
	node := s.node
	if node == nil {
		u.Message = "waiting for the Node, to run " + want
		return false, reconcile.Result{RequeueAfter: r.Config.HealthResync}, nil
	}
	asked := node.Labels[v1alpha1.NodeUpdateVersionLabel] == want && node.Labels[v1alpha1.NodeUpdateLabel] != ""
	if !asked {
		if node.Status.NodeInfo.KubeletVersion == want {
			return true, reconcile.Result{}, nil // already runs it: nothing to ask
		}
		u.Message = "asked the node agent of Node " + node.Name + " to run " + want
		return false, reconcile.Result{}, r.patchNode(ctx, s, func(n *corev1.Node) {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[v1alpha1.NodeUpdateLabel] = v1alpha1.NodeUpdateReady
			n.Labels[v1alpha1.NodeUpdateVersionLabel] = want
			delete(n.Annotations, v1alpha1.NodeUpdateMessageAnnotation)
		})
	}
	switch node.Labels[v1alpha1.NodeUpdateLabel] {
	case v1alpha1.NodeUpdateFailed:
		msg := node.Annotations[v1alpha1.NodeUpdateMessageAnnotation]
		if msg == "" {
			msg = "(no message)"
		}
		r.endInPlace(s, v1alpha1.InPlaceFailed, "the node agent of Node "+node.Name+" could not update to "+want+": "+msg)
		return false, reconcile.Result{}, nil
	case v1alpha1.NodeUpdateSucceeded:
		if node.Status.NodeInfo.KubeletVersion != want {
			u.Message = "the node agent of Node " + node.Name + " reports success; waiting for its kubelet to report " + want +
				" (reports " + node.Status.NodeInfo.KubeletVersion + ")"
			return false, reconcile.Result{}, nil
		}
		if c := nodeReady(node); c == nil || c.Status != corev1.ConditionTrue {
			u.Message = "Node " + node.Name + " runs " + want + "; waiting for it to be Ready"
			return false, reconcile.Result{}, nil
		}
		return true, reconcile.Result{}, nil
	case v1alpha1.NodeUpdateInProgress:
		u.Message = "the node agent of Node " + node.Name + " is updating it to " + want
	default:
		u.Message = "waiting for the node agent of Node " + node.Name + " to take the update to " + want
	}
	return false, reconcile.Result{}, nil
}

// releaseNodeFromUpdate undoes on the Node what an in-place update did
// there, and only that: its own cordon (NodeInPlaceCordonAnnotation) and
// the update keys. A cordon someone else set stays.
func (r *Reconciler) releaseNodeFromUpdate(ctx context.Context, s *scope) error {
	node := s.node
	if node == nil || !(hasUpdateKeys(node) || node.Annotations[v1alpha1.NodeInPlaceCordonAnnotation] != "") {
		return nil
	}
	return r.patchNode(ctx, s, func(n *corev1.Node) {
		if n.Annotations[v1alpha1.NodeInPlaceCordonAnnotation] != "" {
			n.Spec.Unschedulable = false
			delete(n.Annotations, v1alpha1.NodeInPlaceCordonAnnotation)
		}
		removeUpdateKeys(n)
	})
}

// clearNodeUpdateKeys removes the update keys a previous update left.
func (r *Reconciler) clearNodeUpdateKeys(ctx context.Context, s *scope) error {
	if s.node == nil || !hasUpdateKeys(s.node) {
		return nil
	}
	return r.patchNode(ctx, s, removeUpdateKeys)
}

func hasUpdateKeys(n *corev1.Node) bool {
	_, label := n.Labels[v1alpha1.NodeUpdateLabel]
	_, version := n.Labels[v1alpha1.NodeUpdateVersionLabel]
	_, message := n.Annotations[v1alpha1.NodeUpdateMessageAnnotation]
	return label || version || message
}

func removeUpdateKeys(n *corev1.Node) {
	delete(n.Labels, v1alpha1.NodeUpdateLabel)
	delete(n.Labels, v1alpha1.NodeUpdateVersionLabel)
	delete(n.Annotations, v1alpha1.NodeUpdateMessageAnnotation)
}

// patchNode applies edit to the Machine's Node, each label, annotation
// and taint it changes on its value read (package patch). A Conflict (the
// agent wrote one of them meanwhile) is returned: the reconcile starts
// over soon from a fresh read (Reconcile). The kubelet's status writes,
// many while a Node reboots, do not refuse it.
func (r *Reconciler) patchNode(ctx context.Context, s *scope, edit func(*corev1.Node)) error {
	node := s.node.DeepCopy()
	edit(node)
	if err := patch.New(r.Target, s.node).PatchObjectLocked(ctx, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.node = node
	return nil
}

// syncNodeVersion keeps status.nodeVersion equal to the Node's kubeletVersion.
func syncNodeVersion(s *scope) {
	if s.node != nil {
		s.machine.Status.NodeVersion = s.node.Status.NodeInfo.KubeletVersion
	}
}
