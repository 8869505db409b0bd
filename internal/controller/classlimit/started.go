package classlimit

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// CreateStart is when the Machine's create started, the time its
// creation timeout, its bootstrap token's lifetime and a health check's
// nodeStartupTimeout count from (docs/concepts.md, "Provisioning limits
// per class"); waiting is true while the Machine waits in its class's
// create queue (its CreateQueued condition True), when none of them runs.
// A Machine that never waited started at its creation; one that waited
// when its CreateQueued condition turned False (its turn came, or it left
// the queue).
func CreateStart(m *v1alpha1.Machine) (start time.Time, waiting bool) {
	start = m.CreationTimestamp.Time
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.CreateQueuedCondition)
	if c == nil {
		return start, false
	}
	if c.Status == metav1.ConditionTrue {
		return time.Time{}, true
	}
	if c.LastTransitionTime.After(start) {
		start = c.LastTransitionTime.Time
	}
	return start, false
}
