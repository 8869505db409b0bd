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
	if node.Spec.Unschedulable {
		return nil
	}
	// A merge patch of the one field, without a resourceVersion: the kubelet
	// updates the Node all the time and must not make the cordon conflict.
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Unschedulable = true
	if err := c.Patch(ctx, node, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cordoning node %s: %w", nodeName, err)
	}
	return nil
}
