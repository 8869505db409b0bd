package plan

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Count counts a set's Machines as of now. A Machine is available when it
// is not being deleted, has no failureReason and its Ready condition has
// been True for minReady; supersededAt (zero: unknown) is when an OnDelete
// set was superseded. next is how long until the first Ready Machine
// becomes available (0: none pending), when the deployment must look again.
func Count(machines []*v1alpha1.Machine, minReady time.Duration, now, supersededAt time.Time) (c Counts, next time.Duration) {
	for _, m := range machines {
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
		if m.Status.FailureReason != "" {
			continue
		}
		ready := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ReadyCondition)
		if ready == nil || ready.Status != metav1.ConditionTrue {
			continue
		}
		if left := ready.LastTransitionTime.Add(minReady).Sub(now); left <= 0 {
			c.Available++
		} else if next == 0 || left < next {
			next = left
		}
	}
	return c, next
}
