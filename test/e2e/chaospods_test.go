package e2e

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/internal/drain"
)

// podFates is the chaos run's sound PodDisruptionBudget check
// (docs/reliability.md): the budget holds when no workload pod leaves but
// through the Eviction API, which the API server refuses past the budget.
// Every deletion of a workload pod the recorder sees must carry the
// DisruptionTarget condition of an eviction (the API server's, or one it
// approved that the drain carried out), of a drain that deleted it
// past its budget for a documented reason (drain.DisruptionReason:
// counted, not a violation), or of Kubernetes' own involuntary
// disruptions. A pod found gone by a relist, its deletion never seen, is
// counted apart.
type podFates struct {
	mu     sync.Mutex
	judged map[types.UID]bool
	next   int // r.podDeletions judged so far
	// What became of the workload's pods.
	evicted, drainDeleted, involuntary, unseen int
}

// involuntaryReasons are the DisruptionTarget reasons of Kubernetes'
// components that take a pod without asking its budget, as they must.
var involuntaryReasons = map[string]bool{
	"DeletionByTaintManager": true, "DeletionByPodGC": true, "TerminationByKubelet": true, "PreemptionByScheduler": true,
}

func newPodFates() *podFates { return &podFates{judged: map[types.UID]bool{}} }

func (f *podFates) check() check {
	return func(r *recorder) string {
		f.mu.Lock()
		defer f.mu.Unlock()
		var bad string
		judge := func(p *corev1.Pod) {
			if p.Labels["app"] != "work" || f.judged[p.UID] {
				return
			}
			f.judged[p.UID] = true
			if v := f.judge(p); v != "" && bad == "" {
				bad = v
			}
		}
		for _, p := range r.podsLocked() {
			if p.DeletionTimestamp != nil {
				judge(p)
			}
		}
		for ; f.next < len(r.podDeletions); f.next++ {
			judge(r.podDeletions[f.next].pod)
		}
		return bad
	}
}

// judge counts what became of one workload pod being deleted, and says
// what is wrong with it.
func (f *podFates) judge(p *corev1.Pod) string {
	reason := ""
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			reason = c.Reason
		}
	}
	switch {
	case reason == "EvictionByEvictionAPI", reason == drain.ApprovedEvictionReason:
		f.evicted++
	case reason == drain.DisruptionReason:
		f.drainDeleted++
	case involuntaryReasons[reason]:
		f.involuntary++
	case p.DeletionTimestamp == nil:
		f.unseen++
	default:
		return fmt.Sprintf("pod %s of the workload was deleted without going through the Eviction API nor saying why (DisruptionTarget reason %q)", p.Name, reason)
	}
	return ""
}

// String is the tally for the run's summary.
func (f *podFates) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("workload pods evicted %d, deleted past their budget by a drain %d, taken by Kubernetes %d, gone unseen %d",
		f.evicted, f.drainDeleted, f.involuntary, f.unseen)
}

// outageBudget is the PodDisruptionBudget's invariant under a chaos run:
// at least min pods of the workload are available, except in an outage:
// from a kube-apiserver kill, or a Node of the scenario seen not Ready,
// until every pod is available again. An API server outage of a few
// seconds lets the kubelets' Leases lapse, and so does a starved kwok on
// a loaded machine: kube-controller-manager marks the Nodes NotReady and
// their pods not Ready, and the pods are Ready again only some seconds
// after their Nodes. That loss is involuntary, which no
// PodDisruptionBudget covers; it lowers what the budget grants, and the
// eviction API then refuses Millwright's drains. What Millwright itself
// deletes is judged one pod at a time, outages or not (podFates,
// docs/reliability.md).
type outageBudget struct {
	min, replicas int
	mu            sync.Mutex
	outage        bool
	suspended     int // checks skipped in outages
}

// apiServerKilled starts an outage window (a Node seen not Ready starts
// one too).
func (b *outageBudget) apiServerKilled() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outage = true
}

func (b *outageBudget) check() check {
	return func(r *recorder) string {
		n := 0
		for _, p := range r.podsLocked() {
			if p.Labels["app"] == "work" && podAvailable(p) {
				n++
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, o := range r.objs[kindNode] {
			if !nodeReady(o.(*corev1.Node)) {
				b.outage = true
			}
		}
		if b.outage {
			b.outage = n < b.replicas
			b.suspended++
			return ""
		}
		if n < b.min {
			return fmt.Sprintf("only %d pods of the workload available, the budget keeps %d", n, b.min)
		}
		return ""
	}
}
