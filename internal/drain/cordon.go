package drain

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cordon marks the Node unschedulable, so the scheduler places no new pods
// on it while it is drained. It is idempotent, and a Node that does not
// exist (never registered, or already deleted) is not an error: there is
// nothing to protect.
func Cordon(ctx context.Context, c client.Client, nodeName string) error {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("getting node %s: %w", nodeName, err)
	}
	return CordonNode(ctx, c, node)
}

// CordonNode is Cordon of a Node the caller has read already, from a
// cache for instance: it reads nothing. A Node read unschedulable is not
// written. node is not changed.
func CordonNode(ctx context.Context, c client.Client, node *corev1.Node) error {
	if node.Spec.Unschedulable {
		return nil
	}
	// A merge patch of the one field, without a resourceVersion: the kubelet
	// updates the Node all the time and must not make the cordon conflict,
	// and the field set is the same whatever the Node's version.
	cordoned := node.DeepCopy()
	cordoned.Spec.Unschedulable = true
	if err := c.Patch(ctx, cordoned, client.MergeFrom(node)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cordoning node %s: %w", node.Name, err)
	}
	return nil
}
