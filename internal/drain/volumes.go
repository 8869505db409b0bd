package drain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// boundVolumes returns the PersistentVolumes bound to pod's claims. Claims
// or volumes that do not exist, and unbound claims, are left out: nothing
// of theirs can be attached to the Node.
func boundVolumes(ctx context.Context, c client.Client, pod *corev1.Pod) ([]*corev1.PersistentVolume, error) {
	var pvs []*corev1.PersistentVolume
	for _, name := range claimNames(pod) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("getting claim %s/%s of pod %s: %w", pod.Namespace, name, podKey(pod), err)
		}
		if pvc.Spec.VolumeName == "" {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("getting volume %s of pod %s: %w", pvc.Spec.VolumeName, podKey(pod), err)
		}
		pvs = append(pvs, pv)
	}
	return pvs, nil
}

// volumeIDs names pvs the way they may appear in node.status.volumesAttached:
// the IDs the driver maps them to (when it implements the mapping), plus
// each volume's CSI volume handle or, for other volumes, its name. The
// driver leaves out volumes it does not recognise, so its IDs alone could
// miss some; names that match no attached volume are dropped later, so the
// extra candidates cost nothing.
func volumeIDs(ctx context.Context, driverIDs func(context.Context, []*corev1.PersistentVolumeSpec) ([]string, error), pvs []*corev1.PersistentVolume) ([]string, error) {
	if len(pvs) == 0 {
		return nil, nil
	}
	var ids []string
	if driverIDs != nil {
		specs := make([]*corev1.PersistentVolumeSpec, len(pvs))
		for i, pv := range pvs {
			specs[i] = &pv.Spec
		}
		got, err := driverIDs(ctx, specs)
		switch {
		case err == nil:
			ids = append(ids, got...)
		case status.Code(err) == codes.Unimplemented:
			// The driver has no mapping; the fallback names below are all there is.
		default:
			return nil, fmt.Errorf("mapping volumes to the provider's volume IDs: %w", err)
		}
	}
	for _, pv := range pvs {
		if csi := pv.Spec.CSI; csi != nil && csi.VolumeHandle != "" {
			ids = append(ids, csi.VolumeHandle)
		} else {
			ids = append(ids, pv.Name)
		}
	}
	return dedupe(ids), nil
}

// dedupe drops empty and repeated IDs, keeping the first occurrence's order.
func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// attachedMatches reports whether the attached volume name denotes the
// volume id. Attached names are unique volume names such as
// "kubernetes.io/csi/<driver>^<volumeHandle>" or "kubernetes.io/<plugin>/<id>",
// so an ID matches the whole name or the part after the last '^' or '/';
// a substring test would let "vol-1" match "vol-10".
func attachedMatches(name corev1.UniqueVolumeName, id string) bool {
	n := string(name)
	return n == id || strings.HasSuffix(n, "^"+id) || strings.HasSuffix(n, "/"+id)
}

// stillAttached returns the ids that node.status.volumesAttached still lists.
func stillAttached(ids []string, attached []corev1.AttachedVolume) []string {
	var out []string
	for _, id := range ids {
		for _, a := range attached {
			if attachedMatches(a.Name, id) {
				out = append(out, id)
				break
			}
		}
	}
	return out
}

// waitState is the state of a recorded volume wait.
type waitState int

const (
	// waitPending: the pod is still on the Node or its volumes still attached.
	waitPending waitState = iota
	// waitOver: the pod is gone and its volumes have detached.
	waitOver
	// waitTimedOut: the detach timeout passed; the drain moves on.
	waitTimedOut
)

// checkWait evaluates the wait w. podPresent says whether the evicted pod is
// still on the Node: its volumes are in use until it is gone, so the next
// pod with volumes waits for both. It returns the wait's IDs still attached.
func checkWait(w *v1alpha1.VolumeWait, podPresent bool, attached []corev1.AttachedVolume, now time.Time, timeout time.Duration) (waitState, []string) {
	still := stillAttached(w.VolumeIDs, attached)
	switch {
	case !podPresent && len(still) == 0:
		return waitOver, nil
	case now.Sub(w.StartTime.Time) >= timeout:
		return waitTimedOut, still
	default:
		return waitPending, still
	}
}
