package drain

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// mirrorPodAnnotation marks a static pod's mirror in the API; deleting the
// mirror does not stop the static pod, so the drain leaves it alone.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// podClass is what the drain does with a pod.
type podClass int

const (
	// classStays: DaemonSet and mirror pods, which stay on the Node.
	classStays podClass = iota
	// classGone: the pod finished (Succeeded or Failed), is not being
	// deleted, and counts as gone.
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
	// A finished pod left on the Node (a Job's, until its TTL) is gone. A
	// finished pod being deleted is not yet: the kubelet gives a deleted
	// pod a terminal phase once its containers stopped, and removes it
	// only after it has unmounted its volumes and torn down its sandbox;
	// the VM must not go before that (kubectl drain waits for the same).
	if (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) && !leaving(pod) {
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
	skipped []*corev1.Pod // left by a drain rule or the pod's drain label
	gone    int           // finished pods
	plain   []*corev1.Pod // without persistent volumes, to evict
	volumes []*corev1.Pod // with persistent volumes, to evict
	waits   []*corev1.Pod // waited for until they complete, never evicted

	// order is the eviction order of each pod in plain and volumes.
	order map[*corev1.Pod]int32
	// current is the lowest order of a pod in plain or volumes: the only
	// order evicted now. hasCurrent is false when both are empty.
	current    int32
	hasCurrent bool
	// conflict reports the first pod several rules disagree about.
	conflict string
}

// newPlan sorts pods by class and, for those the drain evicts or waits
// for, by what the rules (over namespaces' labels) decide.
func newPlan(pods []corev1.Pod, rules []Rule, namespaces map[string]labels.Set) plan {
	p := plan{order: map[*corev1.Pod]int32{}}
	for i := range pods {
		pod := &pods[i]
		class := classify(pod)
		switch class {
		case classStays:
			p.stays = append(p.stays, pod)
			continue
		case classGone:
			p.gone++
			continue
		}
		d := decide(pod, rules, namespaces[pod.Namespace])
		if d.conflict != "" && (p.conflict == "" || d.conflict < p.conflict) {
			p.conflict = d.conflict
		}
		switch d.behavior {
		case v1alpha1.DrainBehaviorSkip:
			p.skipped = append(p.skipped, pod)
			continue
		case v1alpha1.DrainBehaviorWaitCompleted:
			p.waits = append(p.waits, pod)
			continue
		}
		p.order[pod] = d.order
		if !p.hasCurrent || d.order < p.current {
			p.current, p.hasCurrent = d.order, true
		}
		if class == classVolumes {
			p.volumes = append(p.volumes, pod)
		} else {
			p.plain = append(p.plain, pod)
		}
	}
	for _, list := range [][]*corev1.Pod{p.stays, p.skipped, p.plain, p.volumes, p.waits} {
		sort.Slice(list, func(i, j int) bool { return podKey(list[i]) < podKey(list[j]) })
	}
	return p
}

// now reports whether pod, to be evicted, is of the order evicted now.
func (p plan) now(pod *corev1.Pod) bool {
	return p.hasCurrent && p.order[pod] == p.current
}

// later counts the pods to evict in orders after the current one.
func (p plan) later() int {
	n := 0
	for _, list := range [][]*corev1.Pod{p.plain, p.volumes} {
		for _, pod := range list {
			if !p.now(pod) {
				n++
			}
		}
	}
	return n
}

// blocking returns the pods the drain waits for: those of the current
// order still on the Node, then those it waits to complete.
func (p plan) blocking() []string {
	var out []string
	for _, list := range [][]*corev1.Pod{p.plain, p.volumes} {
		for _, pod := range list {
			if p.now(pod) {
				out = append(out, podKey(pod))
			}
		}
	}
	sort.Strings(out)
	for _, pod := range p.waits {
		out = append(out, podKey(pod))
	}
	return out
}

// mustLeave is the number of pods that have to be off the Node before the
// drain is done, terminating ones included.
func (p plan) mustLeave() int { return len(p.plain) + len(p.volumes) + len(p.waits) }

// toEvict returns the plain pods of the current order whose eviction has
// not started yet.
func (p plan) toEvict() []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range p.plain {
		if !leaving(pod) && p.now(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// nextVolumePod returns the first pod with volumes of the current order
// not yet leaving: the one to evict when no volume wait is pending.
func (p plan) nextVolumePod() *corev1.Pod {
	for _, pod := range p.volumes {
		if !leaving(pod) && p.now(pod) {
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
// leave, whatever its order and pods it would wait to complete too, except
// those already being deleted with grace period 0, which the API server
// removes on its own.
func (p plan) toForce() []*corev1.Pod {
	var out []*corev1.Pod
	for _, list := range [][]*corev1.Pod{p.plain, p.volumes, p.waits} {
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
