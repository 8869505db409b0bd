package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// chaosAttacher names the VolumeAttachments the chaos run makes.
const chaosAttacher = "chaos.e2e.millwright.dev"

// volumeWatch stands in for a CSI attacher: it gives every Node of the
// scenario one VolumeAttachment, as a pod's volume would, and records
// when each is released. Millwright releases a Node's VolumeAttachments
// only once its VM is confirmed deleted (docs/drain.md): released while
// the VM may still run — a Node cut off from the API server, a VM stopped
// behind Millwright's back — a ReadWriteOnce volume could be attached
// elsewhere while the old VM still writes to it.
type volumeWatch struct {
	s     *scenario
	stopc chan struct{}
	done  sync.WaitGroup

	mu sync.Mutex
	// attached: the Node of each VolumeAttachment made, by its name.
	attached map[string]string
	// released: when each Node's VolumeAttachment was first seen gone.
	released map[string]time.Time
}

// attachVolumes starts the stand-in attacher; stop ends it.
func (s *scenario) attachVolumes() *volumeWatch {
	w := &volumeWatch{s: s, stopc: make(chan struct{}), attached: map[string]string{}, released: map[string]time.Time{}}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		for {
			select {
			case <-w.stopc:
				return
			case <-time.After(500 * time.Millisecond):
			}
			w.poll()
		}
	}()
	return w
}

// poll attaches a volume to each Node seen for the first time and records
// the attachments gone since the last poll. The API server may be down
// for a moment: a failed list waits for the next poll.
func (w *volumeWatch) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var vas storagev1.VolumeAttachmentList
	if err := k8s.List(ctx, &vas); err != nil {
		return
	}
	live := map[string]bool{}
	for _, va := range vas.Items {
		if va.Spec.Attacher == chaosAttacher && va.DeletionTimestamp.IsZero() {
			live[va.Name] = true
		}
	}
	// Listed after the attachments: a Node deleted in between has had its
	// attachment released already, and is not attached again.
	var nodes corev1.NodeList
	if err := k8s.List(ctx, &nodes); err != nil {
		return
	}
	seen := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, node := range w.attached {
		if _, done := w.released[node]; !done && !live[name] {
			w.released[node] = seen
		}
	}
	for _, n := range nodes.Items {
		name := chaosAttacher + "-" + n.Name
		if !w.s.ownsNode(n.Name) || !n.DeletionTimestamp.IsZero() || w.attached[name] != "" {
			continue
		}
		va := &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: chaosAttacher,
				NodeName: n.Name,
				Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(n.Name)},
			},
		}
		if err := k8s.Create(ctx, va); err == nil {
			w.attached[name] = n.Name
		}
	}
}

// stop ends the attacher, deletes the attachments left, and returns a
// violation for every attachment released while the VM of its Node's
// Machine was still listed: the VM polls (vmWatch) say when each
// Machine's VM was last seen, and a poll that began after the release
// and still found the VM proves the order wrong. The Machine of a Node is
// the recorder's (by the Node's name in its status, or its providerID).
func (w *volumeWatch) stop(rec *recorder, vms *vmWatch) (attached, released int, violations []string) {
	close(w.stopc)
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range w.attached {
		va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := k8s.Delete(context.Background(), va); client.IgnoreNotFound(err) != nil {
			w.s.t.Logf("deleting VolumeAttachment %s: %v", name, err)
		}
	}
	vms.mu.Lock()
	defer vms.mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for node, at := range w.released {
		machine, _ := rec.stateAtLocked(deletion{name: node})
		if last, ok := vms.lastSeen[machine]; machine != "" && ok && last.After(at) {
			violations = append(violations, fmt.Sprintf("the VolumeAttachment of Node %s was released (seen gone at %s) while Machine %s's VM was still there (listed by a poll begun at %s)",
				node, at.UTC().Format(time.StampMilli), machine, last.UTC().Format(time.StampMilli)))
		}
	}
	return len(w.attached), len(w.released), violations
}
