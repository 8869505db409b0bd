package drain

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func TestAttachedMatches(t *testing.T) {
	for _, tc := range []struct {
		name corev1.UniqueVolumeName
		id   string
		want bool
	}{
		{"kubernetes.io/csi/ebs.csi.aws.com^vol-1", "vol-1", true},
		{"kubernetes.io/csi/ebs.csi.aws.com^vol-10", "vol-1", false},
		{"kubernetes.io/csi/ebs.csi.aws.com^avol-1", "vol-1", false},
		{"kubernetes.io/aws-ebs/aws://eu-west-1a/vol-1", "vol-1", true},
		{"kubernetes.io/gce-pd/disk-1", "disk-1", true},
		{"pv-1", "pv-1", true},
		{"kubernetes.io/csi/d^vol-1", "d^vol-1", true},
		{"kubernetes.io/csi/d^vol-1", "", false},
	} {
		if got := attachedMatches(tc.name, tc.id); got != tc.want {
			t.Errorf("attachedMatches(%q, %q) = %v, want %v", tc.name, tc.id, got, tc.want)
		}
	}
}

func TestStillAttached(t *testing.T) {
	attached := []corev1.AttachedVolume{{Name: "kubernetes.io/csi/d^vol-a"}, {Name: "kubernetes.io/csi/d^vol-c"}}
	if got := stillAttached([]string{"vol-a", "vol-b", "vol-c"}, attached); !slices.Equal(got, []string{"vol-a", "vol-c"}) {
		t.Errorf("stillAttached = %v, want [vol-a vol-c]", got)
	}
	if got := stillAttached([]string{"vol-a"}, nil); got != nil {
		t.Errorf("stillAttached with nothing attached = %v", got)
	}
}

func TestCheckWait(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &v1alpha1.VolumeWait{Pod: "db/pg-0", VolumeIDs: []string{"vol-a", "vol-b"}, StartTime: metav1.NewTime(start)}
	both := []corev1.AttachedVolume{{Name: "kubernetes.io/csi/d^vol-a"}, {Name: "kubernetes.io/csi/d^vol-b"}}
	one := both[1:]
	other := []corev1.AttachedVolume{{Name: "kubernetes.io/csi/d^vol-z"}}
	for _, tc := range []struct {
		name       string
		podPresent bool
		attached   []corev1.AttachedVolume
		elapsed    time.Duration
		want       waitState
		wantStill  []string
	}{
		{"pod still there, volumes attached", true, both, 0, waitPending, []string{"vol-a", "vol-b"}},
		{"pod gone, one volume still attached", false, one, time.Minute, waitPending, []string{"vol-b"}},
		{"pod still there, volumes detached", true, other, time.Minute, waitPending, nil},
		{"pod gone, volumes detached", false, other, time.Minute, waitOver, nil},
		{"pod gone and detached after the timeout: over, not timed out", false, nil, time.Hour, waitOver, nil},
		{"just before the timeout", false, one, 2*time.Minute - time.Nanosecond, waitPending, []string{"vol-b"}},
		{"at the timeout", false, one, 2 * time.Minute, waitTimedOut, []string{"vol-b"}},
		{"pod still there at the timeout", true, nil, 3 * time.Minute, waitTimedOut, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, still := checkWait(w, tc.podPresent, tc.attached, start.Add(tc.elapsed), 2*time.Minute)
			if got != tc.want || !slices.Equal(still, tc.wantStill) {
				t.Errorf("checkWait = %d, %v; want %d, %v", got, still, tc.want, tc.wantStill)
			}
		})
	}
}

// pvs returns a CSI volume with handle h-a and an in-tree (host path) volume named pv-b.
func pvs() []*corev1.PersistentVolume {
	return []*corev1.PersistentVolume{
		{ObjectMeta: metav1.ObjectMeta{Name: "pv-a"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h-a"},
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pv-b"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: "/b"},
		}}},
	}
}

func TestVolumeIDs(t *testing.T) {
	answer := func(ids []string, err error) func(context.Context, []*corev1.PersistentVolumeSpec) ([]string, error) {
		return func(_ context.Context, specs []*corev1.PersistentVolumeSpec) ([]string, error) {
			if len(specs) != 2 || specs[0].CSI == nil || specs[0].CSI.VolumeHandle != "h-a" {
				t.Errorf("driver asked about %+v, want both volumes' specs in order", specs)
			}
			return ids, err
		}
	}
	for _, tc := range []struct {
		name    string
		driver  func(context.Context, []*corev1.PersistentVolumeSpec) ([]string, error)
		want    []string
		wantErr bool
	}{
		{"no driver: CSI handle or PV name", nil, []string{"h-a", "pv-b"}, false},
		{"driver Unimplemented (machine error code)", answer(nil, driver.Errorf(driver.Unimplemented, "no")), []string{"h-a", "pv-b"}, false},
		{"driver Unimplemented (gRPC status)", answer(nil, status.Error(codes.Unimplemented, "no")), []string{"h-a", "pv-b"}, false},
		{"driver IDs first, fallback names after, no repeats", answer([]string{"vol-b", "h-a"}, nil), []string{"vol-b", "h-a", "pv-b"}, false},
		{"driver recognises nothing", answer(nil, nil), []string{"h-a", "pv-b"}, false},
		{"driver fails", answer(nil, driver.Errorf(driver.Unavailable, "down")), nil, true},
		{"driver fails with a plain error", answer(nil, errors.New("boom")), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := volumeIDs(t.Context(), tc.driver, pvs())
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Errorf("volumeIDs = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestVolumeIDsWithoutVolumesAsksNoDriver(t *testing.T) {
	called := false
	ids, err := volumeIDs(t.Context(), func(context.Context, []*corev1.PersistentVolumeSpec) ([]string, error) {
		called = true
		return nil, nil
	}, nil)
	if ids != nil || err != nil || called {
		t.Errorf("volumeIDs(no volumes) = %v, %v, driver called %v; want nothing and no call", ids, err, called)
	}
}
