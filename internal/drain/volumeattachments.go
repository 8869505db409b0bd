package drain

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deleteVolumeAttachments deletes the VolumeAttachments of a Node whose
// drain is forced, and returns how many it deleted. A forced drain means
// the Node is unreachable or out of time: its kubelet will not unmount,
// and the attach-detach controller waits minutes (its maximum wait for an
// unmount) before it detaches a volume it cannot see unmounted, so the
// pods just deleted could not attach their ReadWriteOnce volumes anywhere
// else meanwhile. Deleting the VolumeAttachment lets the CSI attacher
// detach the volume now; the Node and its VM are deleted next anyway.
func deleteVolumeAttachments(ctx context.Context, c client.Client, node string) (int, error) {
	var list storagev1.VolumeAttachmentList
	if err := c.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing VolumeAttachments: %w", err)
	}
	deleted := 0
	for i := range list.Items {
		va := &list.Items[i]
		if va.Spec.NodeName != node || !va.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.Delete(ctx, va); err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("deleting VolumeAttachment %s: %w", va.Name, err)
		}
		deleted++
	}
	return deleted, nil
}
