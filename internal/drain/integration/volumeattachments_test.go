package integration

import (
	"context"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
)

// newAttachment creates a VolumeAttachment of a volume to node; no attacher
// runs, so it carries no finalizer and a deletion removes it at once.
func newAttachment(t *testing.T, node string) *storagev1.VolumeAttachment {
	t.Helper()
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va-" + rand.String(8)},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: csiDriver,
			NodeName: node,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + rand.String(6))},
		},
	}
	if err := env.Client.Create(t.Context(), va); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), va) })
	return va
}

func attachmentExists(t *testing.T, va *storagev1.VolumeAttachment) bool {
	t.Helper()
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(va), &storagev1.VolumeAttachment{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// A forced drain leaves the Node's VolumeAttachments alone: its VM may still
// run and write to the volumes. Once the VM is gone the Machine's deletion
// releases them (ReleaseVolumeAttachments), so they detach at once instead
// of after the attach-detach controller's wait for an unmount nobody will
// do; another Node's stay.
func TestVolumeAttachmentsAreReleasedOnlyAfterTheDrain(t *testing.T) {
	ns := newNamespace(t)
	node, other := newNode(t, true), newNode(t, false)
	newVolume(t, ns, "data-pg-0")
	pod := newPod(t, ns, node.Name, "pg-0", withClaim("data-pg-0"))
	waitRunning(t, pod)
	mine := []*storagev1.VolumeAttachment{newAttachment(t, node.Name), newAttachment(t, node.Name)}
	theirs := newAttachment(t, other.Name)

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, Force: true}
	stepUntilDone(t, status, opts, nil)
	for _, va := range mine {
		if !attachmentExists(t, va) {
			t.Errorf("a forced drain deleted VolumeAttachment %s while the VM may still use the volume", va.Name)
		}
	}

	n, err := drain.ReleaseVolumeAttachments(t.Context(), env.Client, node.Name)
	if err != nil || n != len(mine) {
		t.Errorf("ReleaseVolumeAttachments = %d, %v; want the Node's %d", n, err, len(mine))
	}
	for _, va := range mine {
		if attachmentExists(t, va) {
			t.Errorf("VolumeAttachment %s of the released Node is still there", va.Name)
		}
	}
	if !attachmentExists(t, theirs) {
		t.Errorf("VolumeAttachment %s of another Node was deleted", theirs.Name)
	}
}
