package drain

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// pod builds a pod for the planning tests.
func pod(ns, name string, opts ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func owned(kind string, controller bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: "owner", Controller: ptr.To(controller)})
	}
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

func claim(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
		}})
	}
}

func ephemeral(volume string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{},
		}})
	}
}

func emptyDir(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

func mirrored(p *corev1.Pod) {
	p.Annotations = map[string]string{mirrorPodAnnotation: "hash"}
}

// t0 is when the planning tests' pods were deleted.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// deleting marks the pod as deleted at t0 with the given grace period; the
// API server sets the deletion timestamp to the end of the grace period.
func deleting(grace int64) func(*corev1.Pod) {
	return deletingAt(t0, grace)
}

func deletingAt(at time.Time, grace int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: at.Add(time.Duration(grace) * time.Second)}
		p.DeletionGracePeriodSeconds = ptr.To(grace)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want podClass
	}{
		{"bare pod", pod("ns", "a"), classPlain},
		{"ReplicaSet pod", pod("ns", "a", owned("ReplicaSet", true)), classPlain},
		{"emptyDir is not a persistent volume", pod("ns", "a", emptyDir), classPlain},
		{"DaemonSet pod stays", pod("ns", "a", owned("DaemonSet", true)), classStays},
		{"DaemonSet owner that is not the controller", pod("ns", "a", owned("DaemonSet", false)), classPlain},
		{"mirror pod stays", pod("ns", "a", mirrored), classStays},
		{"mirror pod with a claim stays", pod("ns", "a", mirrored, claim("c")), classStays},
		{"succeeded pod is gone", pod("ns", "a", phase(corev1.PodSucceeded)), classGone},
		{"failed pod is gone", pod("ns", "a", phase(corev1.PodFailed)), classGone},
		{"finished pod with a claim is gone", pod("ns", "a", claim("c"), phase(corev1.PodFailed)), classGone},
		{"finished pod being deleted has not left yet", pod("ns", "a", phase(corev1.PodFailed), deleting(30)), classPlain},
		{"finished pod with a claim being deleted has not left yet", pod("ns", "a", claim("c"), phase(corev1.PodSucceeded), deleting(30)), classVolumes},
		{"finished DaemonSet pod stays", pod("ns", "a", owned("DaemonSet", true), phase(corev1.PodSucceeded)), classStays},
		{"running pod is plain", pod("ns", "a", phase(corev1.PodRunning)), classPlain},
		{"claim", pod("ns", "a", claim("c"), emptyDir), classVolumes},
		{"generic ephemeral volume", pod("ns", "a", ephemeral("scratch")), classVolumes},
		{"StatefulSet pod being deleted keeps its class", pod("ns", "a", owned("StatefulSet", true), claim("c"), deleting(30)), classVolumes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(&tc.pod); got != tc.want {
				t.Errorf("classify = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestClaimNames(t *testing.T) {
	p := pod("ns", "pg-0", claim("data-pg-0"), emptyDir, ephemeral("cache"))
	if got, want := claimNames(&p), []string{"data-pg-0", "pg-0-cache"}; !slices.Equal(got, want) {
		t.Errorf("claimNames = %v, want %v (ephemeral claims are named <pod>-<volume>)", got, want)
	}
}

// keys returns the pods' namespace/names.
func keys(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, podKey(p))
	}
	return out
}

func TestPlan(t *testing.T) {
	pods := []corev1.Pod{
		pod("b", "web-1"),
		pod("a", "web-9", deleting(30)),
		pod("a", "web-2"),
		pod("db", "pg-1", claim("data-pg-1")),
		pod("db", "pg-0", claim("data-pg-0")),
		pod("db", "pg-2", claim("data-pg-2"), deleting(0)),
		pod("kube-system", "agent", owned("DaemonSet", true)),
		pod("kube-system", "etcd", mirrored),
		pod("jobs", "done", phase(corev1.PodSucceeded)),
		pod("jobs", "crashed", phase(corev1.PodFailed)),
	}
	p := newPlan(pods, nil, nil)

	for _, tc := range []struct {
		what      string
		got, want []string
	}{
		{"plain pods, by namespace/name", keys(p.plain), []string{"a/web-2", "a/web-9", "b/web-1"}},
		{"pods with volumes, by namespace/name", keys(p.volumes), []string{"db/pg-0", "db/pg-1", "db/pg-2"}},
		{"pods that stay", keys(p.stays), []string{"kube-system/agent", "kube-system/etcd"}},
		{"plain pods to evict: not those already leaving", keys(p.toEvict()), []string{"a/web-2", "b/web-1"}},
		{"forced: all but those deleted with grace period 0", keys(p.toForce()), []string{"a/web-2", "a/web-9", "b/web-1", "db/pg-0", "db/pg-1"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if p.gone != 2 {
		t.Errorf("gone = %d, want the 2 finished pods", p.gone)
	}
	if p.mustLeave() != 6 {
		t.Errorf("mustLeave = %d, want 6 (terminating pods included)", p.mustLeave())
	}
	if got := p.nextVolumePod(); got == nil || podKey(got) != "db/pg-0" {
		t.Errorf("nextVolumePod = %v, want db/pg-0, the first by name", got)
	}
	if got := p.leavingVolumePod(t0.Add(time.Minute), 2*time.Minute); got == nil || podKey(got) != "db/pg-2" {
		t.Errorf("leavingVolumePod = %v, want db/pg-2", got)
	}
	if p.find("db/pg-1") == nil || p.find("jobs/done") != nil || p.find("kube-system/agent") != nil || p.find("db/pg-9") != nil {
		t.Error("find must see exactly the pods that must leave")
	}
	if !p.holdsBack("db/pg-0") || !p.holdsBack("db/pg-2") {
		t.Error("a wait holds back the other pods with volumes not yet leaving")
	}
	if one := newPlan([]corev1.Pod{pod("db", "pg-0", claim("c"))}, nil, nil); one.holdsBack("db/pg-0") {
		t.Error("a wait for the only pod with volumes holds nothing back")
	}
}

func TestPlanOrderIsStable(t *testing.T) {
	a := newPlan([]corev1.Pod{pod("db", "pg-1", claim("x")), pod("db", "pg-0", claim("y")), pod("app", "z", claim("z"))}, nil, nil)
	b := newPlan([]corev1.Pod{pod("app", "z", claim("z")), pod("db", "pg-0", claim("y")), pod("db", "pg-1", claim("x"))}, nil, nil)
	if !slices.Equal(keys(a.volumes), keys(b.volumes)) {
		t.Errorf("serial order depends on list order: %v vs %v", keys(a.volumes), keys(b.volumes))
	}
}

func TestPlanEmpty(t *testing.T) {
	p := newPlan([]corev1.Pod{pod("kube-system", "agent", owned("DaemonSet", true))}, nil, nil)
	if p.mustLeave() != 0 || p.nextVolumePod() != nil || p.leavingVolumePod(t0, time.Minute) != nil || len(p.toForce()) != 0 || len(p.toEvict()) != 0 {
		t.Errorf("a node with only a DaemonSet pod has work: %+v", p)
	}
}

// A pod with volumes being deleted is adopted for a volume wait only while
// its deletion is younger than the detach timeout, so a pod stuck
// terminating is waited for once, not again after every timeout.
func TestLeavingVolumePod(t *testing.T) {
	p := newPlan([]corev1.Pod{
		pod("db", "pg-0", claim("a"), deletingAt(t0, 30)),                 // deletion requested at t0
		pod("db", "pg-1", claim("b"), deletingAt(t0.Add(time.Minute), 0)), // at t0+1m
		pod("db", "pg-2", claim("c")),
	}, nil, nil)
	for _, tc := range []struct {
		now  time.Duration // after t0
		want string
	}{
		{0, "db/pg-0"},
		{2*time.Minute - time.Nanosecond, "db/pg-0"},
		{2 * time.Minute, "db/pg-1"}, // pg-0 had its wait: the next leaving pod is adopted
		{3*time.Minute - time.Nanosecond, "db/pg-1"},
		{3 * time.Minute, ""}, // both had their waits
	} {
		got := p.leavingVolumePod(t0.Add(tc.now), 2*time.Minute)
		if key := keyOf(got); key != tc.want {
			t.Errorf("at t0+%s: leavingVolumePod = %q, want %q", tc.now, key, tc.want)
		}
	}
}

func keyOf(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	return podKey(p)
}

func TestDeletionStart(t *testing.T) {
	p := pod("ns", "a", deletingAt(t0, 30))
	if got := deletionStart(&p); !got.Equal(t0) {
		t.Errorf("deletionStart = %s, want %s (deletion timestamp minus the grace period)", got, t0)
	}
	q := pod("ns", "b")
	q.DeletionTimestamp = &metav1.Time{Time: t0}
	if got := deletionStart(&q); !got.Equal(t0) {
		t.Errorf("deletionStart without a grace period = %s, want the deletion timestamp", got)
	}
}

func TestIndexPodNodeName(t *testing.T) {
	bound := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}}
	if got := IndexPodNodeName(bound); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("IndexPodNodeName(bound) = %v", got)
	}
	if got := IndexPodNodeName(&corev1.Pod{}); got != nil {
		t.Errorf("IndexPodNodeName(unbound) = %v, want nothing", got)
	}
	if got := IndexPodNodeName(&corev1.Node{}); got != nil {
		t.Errorf("IndexPodNodeName(node) = %v, want nothing", got)
	}
}

func TestOutOfRetries(t *testing.T) {
	for _, tc := range []struct {
		round, max int32
		want       bool
	}{
		{1, 0, true}, // no retries: the first refusal deletes (after one eviction try)
		{1, 3, false},
		{3, 3, false}, // the third refusal is still allowed
		{4, 3, true},
		{10, 3, true},
	} {
		if got := outOfRetries(tc.round, tc.max); got != tc.want {
			t.Errorf("outOfRetries(round %d, max %d) = %v, want %v", tc.round, tc.max, got, tc.want)
		}
	}
}
