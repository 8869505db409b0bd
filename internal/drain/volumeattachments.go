package drain

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReleaseVolumeAttachments deletes the VolumeAttachments of a Node whose
// VM is gone, and returns how many it deleted. Call it only once the VM
// is confirmed deleted: while the VM runs, its volumes may still be
// mounted, and releasing them would let a rescheduled pod attach a
// ReadWriteOnce volume elsewhere while the old VM still writes to it (the
// attach-detach controller waits for an unmount for exactly that reason).
// Once the VM is gone nobody can unmount, so without this the
// attach-detach controller would wait minutes (its maximum wait for an
// unmount) before it detached the volumes of a Node whose drain was
// forced.
func ReleaseVolumeAttachments(ctx context.Context, c client.Client, node string) (int, error) {
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
