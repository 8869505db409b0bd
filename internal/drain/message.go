package drain

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
)

// maxNamed is how many pods a message names before it only counts them:
// the message is one line of a Machine's status.
const maxNamed = 3

// report collects what a Step saw and did, for its message.
type report struct {
	// terminating pods that must leave and are being deleted.
	terminating int
	// blocked pods, by namespace/name.
	blocked []string
	// firstErr is the first failure, with its pod.
	firstErr string
	// still are the IDs of the pending volume wait still attached.
	still []string
	// gaveUp says which volume wait timed out this Step.
	gaveUp string
	// nextRound, when set, is how long the Step waits before the next
	// eviction round (a budget refused the last one).
	nextRound time.Duration
	// held: the next order waits for the previous order's volumes.
	held bool
}

// failure records a failed task's error, keeping the first.
func (r *report) failure(pod *corev1.Pod, tr taskResult) {
	if tr.out == outFailed && r.firstErr == "" {
		r.firstErr = fmt.Sprintf("%s: %v", podKey(pod), tr.err)
	}
}

// render builds the Step's message, e.g. "evicted 3 pods, 2 blocked by
// PodDisruptionBudget (attempt 4/10: db/a, db/b), waiting for volume vol-1
// of db/pg-0 to detach".
func (r *report) render(res Result, status *v1alpha1.DrainStatus, opts Options, p plan) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch {
	case opts.Force && res.Deleted > 0:
		add("force-deleted %s", pods(res.Deleted))
	case res.Deleted > 0:
		add("deleted %s after %d refused eviction rounds", pods(res.Deleted), status.Attempts)
	}
	if res.Evicted > 0 {
		add("evicted %s", pods(res.Evicted))
	}
	if len(r.blocked) > 0 {
		add("%d blocked by PodDisruptionBudget (attempt %d/%d: %s)", len(r.blocked), status.Attempts, opts.MaxEvictRetries, names(r.blocked))
	}
	if r.nextRound > 0 {
		add("eviction refused by a PodDisruptionBudget (attempt %d/%d); next round in %s",
			status.Attempts, opts.MaxEvictRetries, r.nextRound.Round(time.Second))
	}
	if res.Failed > 0 {
		add("%d failed (%s)", res.Failed, r.firstErr)
	}
	if r.gaveUp != "" {
		parts = append(parts, r.gaveUp)
	}
	// A wait for a pod alone (no volume attached) is worth naming only
	// while it holds another pod back; the count of terminating pods
	// covers it otherwise.
	if w := status.VolumeWait; w != nil && (len(r.still) > 0 || p.holdsBack(w.Pod)) {
		if len(r.still) == 0 {
			add("waiting for %s before the next pod with volumes", waitSubject(w.Pod, r.still))
		} else {
			add("waiting for %s", waitSubject(w.Pod, r.still))
		}
	}
	if r.terminating > 0 {
		add("%s terminating", pods(r.terminating))
	}
	// The order is worth naming only when rules made more than one, or
	// moved the pods off the default.
	if later := p.later(); !opts.Force && p.hasCurrent && (later > 0 || p.current != 0) {
		if r.held {
			add("order %d waits for the volumes of the previous order", p.current)
		} else {
			add("on order %d", p.current)
		}
		if later > 0 {
			add("%s in later orders", pods(later))
		}
	}
	if len(p.waits) > 0 && !opts.Force {
		keys := make([]string, 0, len(p.waits))
		for _, pod := range p.waits {
			keys = append(keys, podKey(pod))
		}
		add("waiting for %s to complete (%s)", pods(len(keys)), names(keys))
	}
	if p.conflict != "" {
		parts = append(parts, p.conflict)
	}
	if res.Done {
		msg := "drained"
		var left []string
		if len(p.stays) > 0 {
			left = append(left, fmt.Sprintf("%d DaemonSet or mirror %s", len(p.stays), plural(len(p.stays), "pod stays", "pods stay")))
		}
		if len(p.skipped) > 0 {
			left = append(left, fmt.Sprintf("%s skipped by drain rules", pods(len(p.skipped))))
		}
		if len(left) > 0 {
			msg += " (" + strings.Join(left, ", ") + ")"
		}
		parts = append(parts, msg)
	} else if len(parts) == 0 {
		add("%s left", pods(res.Remaining))
	}
	return strings.Join(parts, ", ")
}

// waitSubject describes a volume wait: its volumes still attached, or the
// pod when none is attached and only the pod's termination is awaited.
func waitSubject(pod string, still []string) string {
	if len(still) == 0 {
		return pod + " to terminate"
	}
	return fmt.Sprintf("%s %s of %s to detach", plural(len(still), "volume", "volumes"), names(still), pod)
}

// names lists up to maxNamed names and counts the rest.
func names(list []string) string {
	return brief.List(list, maxNamed, ", ")
}

// pods is "1 pod" or "n pods".
func pods(n int) string {
	return fmt.Sprintf("%d %s", n, plural(n, "pod", "pods"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
