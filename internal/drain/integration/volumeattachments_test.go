package integration

import (
	"context"
	"strings"
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

// A forced drain deletes the Node's VolumeAttachments, so its volumes are
// detached at once instead of after the attach-detach controller's wait for
// an unmount the unreachable kubelet never does; another Node's stay. A
// graceful drain leaves them to the attach-detach controller.
func TestForcedDrainReleasesTheNodesVolumeAttachments(t *testing.T) {
	ns := newNamespace(t)
	node, other := newNode(t, true), newNode(t, false)
	newVolume(t, ns, "data-pg-0")
	pod := newPod(t, ns, node.Name, "pg-0", withClaim("data-pg-0"))
	waitRunning(t, pod)
	mine := []*storagev1.VolumeAttachment{newAttachment(t, node.Name), newAttachment(t, node.Name)}
	theirs := newAttachment(t, other.Name)

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, Force: true}
	res := step(t, status, opts)
	if res.VolumeAttachmentsDeleted != len(mine) || !strings.Contains(res.Message, "deleted 2 VolumeAttachment") {
		t.Errorf("forced step: %+v; want the Node's %d VolumeAttachments deleted and said so", res, len(mine))
	}
	for _, va := range mine {
		if attachmentExists(t, va) {
			t.Errorf("VolumeAttachment %s of the force-drained Node is still there", va.Name)
		}
	}
	if !attachmentExists(t, theirs) {
		t.Errorf("VolumeAttachment %s of another Node was deleted", theirs.Name)
	}
	stepUntilDone(t, status, opts, nil)

	// A graceful drain of the other Node (no pods) leaves its attachment.
	if res := step(t, &v1alpha1.DrainStatus{}, drain.Options{NodeName: other.Name}); !res.Done || res.VolumeAttachmentsDeleted != 0 {
		t.Errorf("graceful drain of an empty Node: %+v", res)
	}
	if !attachmentExists(t, theirs) {
		t.Errorf("a graceful drain deleted VolumeAttachment %s", theirs.Name)
	}
}
