package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// csiDriver is the CSI driver of the tests' volumes.
const csiDriver = "csi.example.com"

// newVolume creates a CSI PersistentVolume with a unique volume handle and
// a claim named claim bound to it, and returns the handle. No binder runs:
// the claim's spec.volumeName is the binding the drain reads.
func newVolume(t *testing.T, ns, claim string) string {
	t.Helper()
	handle := "vol-" + rand.String(6)
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + handle},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    size,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: csiDriver, VolumeHandle: handle},
			},
			ClaimRef: &corev1.ObjectReference{Namespace: ns, Name: claim},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: size},
			VolumeName:       pv.Name,
			StorageClassName: ptr.To(""),
		},
	}
	for _, obj := range []client.Object{pv, pvc} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) })
	return handle
}

// attachedName is how the attach-detach controller names a CSI volume in
// node.status.volumesAttached.
func attachedName(handle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName("kubernetes.io/csi/" + csiDriver + "^" + handle)
}

// setAttached writes node.status.volumesAttached, as the attach-detach
// controller would (it does not run here).
func setAttached(t *testing.T, node *corev1.Node, handles ...string) {
	t.Helper()
	var attached []corev1.AttachedVolume
	for _, h := range handles {
		attached = append(attached, corev1.AttachedVolume{Name: attachedName(h), DevicePath: "/dev/" + h})
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.VolumesAttached = attached
	if attached == nil {
		node.Status.VolumesAttached = []corev1.AttachedVolume{}
	}
	if err := env.Client.Status().Patch(t.Context(), node, patch); err != nil {
		t.Fatal(err)
	}
}

// unimplemented is a driver without GetVolumeIDs.
func unimplemented(context.Context, []*corev1.PersistentVolumeSpec) ([]string, error) {
	return nil, driver.Errorf(driver.Unimplemented, "GetVolumeIDs is not implemented")
}

// Pods with volumes are evicted one at a time: the next only once the
// previous pod is gone and its volumes have left node.status.volumesAttached,
// or the detach timeout has passed. Pods without volumes do not wait.
func TestDrainEvictsVolumePodsOneAtATime(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, true)
	h0 := newVolume(t, ns, "data-pg-0")
	h1 := newVolume(t, ns, "data-pg-1")
	pg0 := newPod(t, ns, node.Name, "pg-0", withClaim("data-pg-0"))
	pg1 := newPod(t, ns, node.Name, "pg-1", withClaim("data-pg-1"))
	free := newPod(t, ns, node.Name, "free")
	waitRunning(t, pg0, pg1, free)
	setAttached(t, node, h0, h1, "vol-of-another-pod")

	clock := time.Now()
	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{
		NodeName: node.Name, MaxEvictRetries: 3, VolumeDetachTimeout: time.Minute,
		VolumeIDs: unimplemented, Now: func() time.Time { return clock },
	}

	res := step(t, status, opts)
	if res.Evicted != 2 {
		t.Fatalf("first step evicted %d pods, want the pod without volumes and pg-0", res.Evicted)
	}
	wantWait := v1alpha1.VolumeWait{Pod: ns + "/pg-0", VolumeIDs: []string{h0}, StartTime: metav1.NewTime(clock)}
	if w := status.VolumeWait; w == nil || w.Pod != wantWait.Pod || !slices.Equal(w.VolumeIDs, wantWait.VolumeIDs) || !w.StartTime.Equal(&wantWait.StartTime) {
		t.Fatalf("volume wait %+v, want %+v", status.VolumeWait, wantWait)
	}
	mustExistUntouched(t, pg1)

	// pg-0 is gone but its volume is still attached: pg-1 waits.
	waitGone(t, pg0, free)
	clock = clock.Add(30 * time.Second)
	res = step(t, status, opts)
	if res.Evicted != 0 || res.Done || status.VolumeWait == nil || status.VolumeWait.Pod != ns+"/pg-0" {
		t.Fatalf("step with pg-0's volume attached: %+v, wait %+v; want pg-1 held back", res, status.VolumeWait)
	}
	if want := "waiting for volume " + h0 + " of " + ns + "/pg-0 to detach"; !strings.Contains(res.Message, want) {
		t.Errorf("message %q does not contain %q", res.Message, want)
	}
	mustExistUntouched(t, pg1)

	// The volume detaches: pg-1 is evicted and its own wait starts.
	setAttached(t, node, h1, "vol-of-another-pod")
	res = step(t, status, opts)
	if res.Evicted != 1 || status.VolumeWait == nil || status.VolumeWait.Pod != ns+"/pg-1" || !slices.Equal(status.VolumeWait.VolumeIDs, []string{h1}) {
		t.Fatalf("step after the detach: %+v, wait %+v; want pg-1 evicted and waited for", res, status.VolumeWait)
	}

	// pg-1's volume never detaches: after the timeout the drain moves on.
	waitGone(t, pg1)
	clock = clock.Add(59 * time.Second)
	if res = step(t, status, opts); res.Done || status.VolumeWait == nil {
		t.Fatalf("step before the detach timeout: %+v; want still waiting", res)
	}
	clock = clock.Add(time.Second)
	res = step(t, status, opts)
	if !res.Done || status.VolumeWait != nil {
		t.Fatalf("step at the detach timeout: %+v, wait %+v; want done", res, status.VolumeWait)
	}
	if want := "gave up waiting for volume " + h1 + " of " + ns + "/pg-1 to detach after 1m0s"; !strings.Contains(res.Message, want) {
		t.Errorf("message %q does not contain %q", res.Message, want)
	}
}

// The next pod with volumes also waits for the previous pod to be gone; a
// pod with volumes already being deleted (by someone else, or by a manager
// that restarted before saving its wait) is adopted as the pod waited for
// rather than raced; and a pod stuck terminating holds the others back only
// until the detach timeout, once.
func TestDrainVolumePodsWaitForThePreviousPod(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, false) // no kwok: pods being deleted stay until the test removes them
	var pods []*corev1.Pod
	for _, name := range []string{"pg-0", "pg-1", "pg-2", "pg-3"} {
		pods = append(pods, newPod(t, ns, node.Name, name, withClaim("data-"+name)))
	}
	pg0, pg1, pg2, pg3 := pods[0], pods[1], pods[2], pods[3]
	if err := env.Client.Delete(t.Context(), pg1); err != nil {
		t.Fatal(err)
	}

	clock := time.Now()
	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, VolumeDetachTimeout: time.Minute, Now: func() time.Time { return clock }}
	res := step(t, status, opts)
	if res.Evicted != 0 || status.VolumeWait == nil || status.VolumeWait.Pod != ns+"/pg-1" {
		t.Fatalf("first step: %+v, wait %+v; want the wait adopted for the terminating pg-1 and nothing evicted", res, status.VolumeWait)
	}
	if want := ns + "/pg-1 to terminate before the next pod with volumes"; !strings.Contains(res.Message, want) {
		t.Errorf("message %q does not contain %q", res.Message, want)
	}

	removeNow(t, pg1) // the kubelet finishes pg-1
	res = step(t, status, opts)
	if res.Evicted != 1 || status.VolumeWait == nil || status.VolumeWait.Pod != ns+"/pg-0" || len(status.VolumeWait.VolumeIDs) != 0 {
		t.Fatalf("second step: %+v, wait %+v; want pg-0 evicted and waited for, with no volume attached", res, status.VolumeWait)
	}
	if !deletionStarted(t, pg0) {
		t.Fatal("pg-0 was not evicted")
	}
	res = step(t, status, opts)
	if res.Evicted != 0 || status.VolumeWait.Pod != ns+"/pg-0" {
		t.Fatalf("third step: %+v, wait %+v; want pg-2 held back until pg-0 is gone", res, status.VolumeWait)
	}
	mustExistUntouched(t, pg2, pg3)

	// pg-0 never finishes: after the timeout the drain moves on to pg-2.
	clock = clock.Add(time.Minute)
	res = step(t, status, opts)
	if res.Evicted != 1 || status.VolumeWait == nil || status.VolumeWait.Pod != ns+"/pg-2" {
		t.Fatalf("step at the timeout: %+v, wait %+v; want pg-2 evicted", res, status.VolumeWait)
	}
	if want := "gave up waiting for " + ns + "/pg-0 to terminate after 1m0s"; !strings.Contains(res.Message, want) {
		t.Errorf("message %q does not contain %q", res.Message, want)
	}
	// When pg-2 is gone, the still terminating pg-0 is not waited for
	// again: pg-3 goes next.
	removeNow(t, pg2)
	res = step(t, status, opts)
	if res.Evicted != 1 || status.VolumeWait == nil || status.VolumeWait.Pod != ns+"/pg-3" {
		t.Fatalf("step after pg-2 is gone: %+v, wait %+v; want pg-3 evicted, pg-0 not waited for again", res, status.VolumeWait)
	}
	removeNow(t, pg3)
	if res = step(t, status, opts); res.Done || res.Remaining != 1 || status.VolumeWait != nil {
		t.Fatalf("step with only the stuck pg-0 left: %+v, wait %+v; want not done, no wait", res, status.VolumeWait)
	}
	removeNow(t, pg0)
	if res = step(t, status, opts); !res.Done {
		t.Fatalf("last step: %+v, want done", res)
	}
}

// When the driver cannot map the volumes, the pod with volumes is held back
// (evicting it without knowing what to wait for would break the serial
// order) while the other pods are evicted; it goes once the driver answers.
func TestDrainVolumeIDErrorHoldsBackVolumePod(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, false)
	h := newVolume(t, ns, "data-pg-0")
	setAttached(t, node, h)
	pg0 := newPod(t, ns, node.Name, "pg-0", withClaim("data-pg-0"))
	free := newPod(t, ns, node.Name, "free")

	var gotSpecs []*corev1.PersistentVolumeSpec
	down := true
	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, VolumeIDs: func(_ context.Context, specs []*corev1.PersistentVolumeSpec) ([]string, error) {
		gotSpecs = specs
		if down {
			return nil, driver.Errorf(driver.Unavailable, "provider down")
		}
		return []string{h}, nil
	}}
	res := step(t, status, opts)
	if res.Evicted != 1 || res.Failed != 1 || status.VolumeWait != nil || !strings.Contains(res.Message, "provider down") {
		t.Fatalf("step with the driver down: %+v, wait %+v; want the free pod evicted and pg-0 failed", res, status.VolumeWait)
	}
	mustExistUntouched(t, pg0)
	if !deletionStarted(t, free) {
		t.Error("the pod without volumes was not evicted")
	}
	if len(gotSpecs) != 1 || gotSpecs[0].CSI == nil || gotSpecs[0].CSI.VolumeHandle != h {
		t.Errorf("the driver was asked about %+v, want pg-0's volume %s", gotSpecs, h)
	}

	down = false
	res = step(t, status, opts)
	if res.Evicted != 1 || status.VolumeWait == nil || !slices.Equal(status.VolumeWait.VolumeIDs, []string{h}) {
		t.Fatalf("step with the driver back: %+v, wait %+v; want pg-0 evicted and its volume waited for", res, status.VolumeWait)
	}
}

// removeNow deletes the pod with grace period 0, as the kubelet does once
// the containers have stopped.
func removeNow(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if err := env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	waitGone(t, pod)
}
