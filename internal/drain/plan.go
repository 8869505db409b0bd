package drain

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mirrorPodAnnotation marks a static pod's mirror in the API; deleting the
// mirror does not stop the static pod, so the drain leaves it alone.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// podClass is what the drain does with a pod.
type podClass int

const (
	// classStays: DaemonSet and mirror pods, which stay on the Node.
	classStays podClass = iota
	// classGone: the pod finished (Succeeded or Failed) and counts as gone.
	classGone
	// classPlain: a pod without persistent volumes, evicted in parallel.
	classPlain
	// classVolumes: a pod with persistent volumes, evicted serially.
	classVolumes
)

// classify says what the drain does with pod.
func classify(pod *corev1.Pod) podClass {
	if _, ok := pod.Annotations[mirrorPodAnnotation]; ok {
		return classStays
	}
	if owner := metav1.GetControllerOf(pod); owner != nil && owner.Kind == "DaemonSet" {
		return classStays
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return classGone
	}
	if len(claimNames(pod)) > 0 {
		return classVolumes
	}
	return classPlain
}

// claimNames returns the PersistentVolumeClaims pod mounts: its claims and
// the claims of its generic ephemeral volumes, which Kubernetes names
// <pod>-<volume>. Both are backed by persistent volumes that must detach.
func claimNames(pod *corev1.Pod) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			names = append(names, pod.Name+"-"+v.Name)
		}
	}
	return names
}

// leaving reports whether the pod's deletion has started; the kubelet
// finishes it. Such a pod is waited for, never evicted again.
func leaving(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil
}

// plan is a Node's pods sorted by what the drain does with them. Each list
// is ordered by namespace/name, so serial evictions have a stable order
// across reconciles.
type plan struct {
	stays   []*corev1.Pod // DaemonSet and mirror pods
	gone    int           // finished pods
	plain   []*corev1.Pod // without persistent volumes
	volumes []*corev1.Pod // with persistent volumes
}

// newPlan sorts pods by class.
func newPlan(pods []corev1.Pod) plan {
	var p plan
	for i := range pods {
		pod := &pods[i]
		switch classify(pod) {
		case classStays:
			p.stays = append(p.stays, pod)
		case classGone:
			p.gone++
		case classPlain:
			p.plain = append(p.plain, pod)
		case classVolumes:
			p.volumes = append(p.volumes, pod)
		}
	}
	for _, list := range [][]*corev1.Pod{p.stays, p.plain, p.volumes} {
		sort.Slice(list, func(i, j int) bool { return podKey(list[i]) < podKey(list[j]) })
	}
	return p
}

// mustLeave is the number of pods that have to be off the Node before the
// drain is done, terminating ones included.
func (p plan) mustLeave() int { return len(p.plain) + len(p.volumes) }

// toEvict returns the plain pods whose eviction has not started yet.
func (p plan) toEvict() []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range p.plain {
		if !leaving(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// nextVolumePod returns the first pod with volumes not yet leaving: the one
// to evict when no volume wait is pending.
func (p plan) nextVolumePod() *corev1.Pod {
	for _, pod := range p.volumes {
		if !leaving(pod) {
			return pod
		}
	}
	return nil
}

// holdsBack reports whether a wait for the pod key keeps another pod with
// volumes from being evicted.
func (p plan) holdsBack(key string) bool {
	for _, pod := range p.volumes {
		if !leaving(pod) && podKey(pod) != key {
			return true
		}
	}
	return false
}

// leavingVolumePod returns the first pod with volumes whose deletion
// started less than timeout before now. A volume wait is adopted for it when
// none is recorded (the manager restarted before it saved the wait, or
// someone else deleted the pod), so pods with volumes still leave one at a
// time. A pod that has been leaving longer has had its wait: adopting it
// again would let one stuck pod hold the drain forever.
func (p plan) leavingVolumePod(now time.Time, timeout time.Duration) *corev1.Pod {
	for _, pod := range p.volumes {
		if leaving(pod) && now.Sub(deletionStart(pod)) < timeout {
			return pod
		}
	}
	return nil
}

// deletionStart is when the pod's deletion was requested: the API server
// sets the deletion timestamp to that moment plus the grace period.
func deletionStart(pod *corev1.Pod) time.Time {
	start := pod.DeletionTimestamp.Time
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		start = start.Add(-time.Duration(*g) * time.Second)
	}
	return start
}

// toForce returns the pods a forced drain deletes: every pod that must
// leave, except those already being deleted with grace period 0, which the
// API server removes on its own.
func (p plan) toForce() []*corev1.Pod {
	var out []*corev1.Pod
	for _, list := range [][]*corev1.Pod{p.plain, p.volumes} {
		for _, pod := range list {
			if g := pod.DeletionGracePeriodSeconds; leaving(pod) && g != nil && *g == 0 {
				continue
			}
			out = append(out, pod)
		}
	}
	return out
}

// find returns the pod named key (namespace/name) among those that must
// leave, or nil when it is gone or finished.
func (p plan) find(key string) *corev1.Pod {
	for _, list := range [][]*corev1.Pod{p.plain, p.volumes} {
		for _, pod := range list {
			if podKey(pod) == key {
				return pod
			}
		}
	}
	return nil
}

// podKey is the pod's namespace/name, as VolumeWait.Pod records it.
func podKey(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}
