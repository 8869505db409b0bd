package plan

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/preserve"
)

// Count counts a set's Machines as of now. A Machine is available when it
// is not being deleted, has no failureReason and its Ready condition has
// been True for minReady; supersededAt (zero: unknown) is when an OnDelete
// set was superseded. next is how long until the first Ready Machine
// becomes available (0: none pending), when the deployment must look again.
func Count(machines []*v1alpha1.Machine, minReady time.Duration, now, supersededAt time.Time) (c Counts, next time.Duration) {
	for _, m := range machines {
		if m.DeletionTimestamp.IsZero() && preserve.Held(m) {
			continue // kept, and replaced: neither a replica nor a surge Machine (docs/preservation.md)
		}
		c.Machines++
		if !m.DeletionTimestamp.IsZero() {
			c.Terminating++
			continue
		}
		// A replacement created after the set was superseded is not left
		// (see docs/rollout.md, OnDelete): it is the one removed first.
		if supersededAt.IsZero() || !m.CreationTimestamp.After(supersededAt) {
			c.Left++
		}
		switch left, ready := untilAvailable(m, minReady, now); {
		case !ready:
		case left <= 0:
			c.Available++
		case next == 0 || left < next:
			next = left
		}
	}
	return c, next
}

// Available reports whether a Machine counts as available: not being
// deleted, without a failureReason, its Ready condition True for at least
// minReady. The MachineSet removes Machines that are not available first
// on a scale-down, which the planner's availability floor relies on.
func Available(m *v1alpha1.Machine, minReady time.Duration, now time.Time) bool {
	left, ready := untilAvailable(m, minReady, now)
	return m.DeletionTimestamp.IsZero() && ready && left <= 0
}

// untilAvailable is how long until a Ready Machine without a failureReason
// becomes available (≤ 0: it is); ready is false for any other Machine.
func untilAvailable(m *v1alpha1.Machine, minReady time.Duration, now time.Time) (left time.Duration, ready bool) {
	if m.Status.FailureReason != "" {
		return 0, false
	}
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return 0, false
	}
	return c.LastTransitionTime.Add(minReady).Sub(now), true
}
