package machinedeployment

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// progressInput is what the Progressing condition is decided from.
type progressInput struct {
	Paused bool
	// Deadline is progressDeadlineSeconds; nil means no deadline.
	Deadline   *time.Duration
	Generation int64
	Replicas   int32
	// Old is the status as last written; progress is measured against it.
	Old v1alpha1.MachineDeploymentStatus
	// NewSet names the current template's set; "" when there is none yet.
	NewSet string
	// CreatedNewSet: the new set was created in this reconcile.
	CreatedNewSet bool
	Now           time.Time
	// Failed (strategy InPlace): more updates failed than maxFailed; it
	// says which and why. The rollout is stopped: Progressing False.
	Failed string
	// Awaiting (strategy InPlace, Manual): what the rollout waits for,
	// said when the deadline passes.
	Awaiting string
}

// updateProgressing sets the Progressing condition of st (the new status,
// its conditions copied from the old) as Kubernetes does, and returns how
// long until the deadline must be checked again (0: no need).
//
// metav1.Condition has no lastUpdateTime, so Progressing's
// lastTransitionTime is the last time progress was seen: it moves on every
// sign of progress, and the deadline runs from it.
func updateProgressing(st *v1alpha1.MachineDeploymentStatus, in progressInput) time.Duration {
	set := func(status metav1.ConditionStatus, reason, msg string, touch bool) {
		cur := meta.FindStatusCondition(st.Conditions, v1alpha1.ProgressingCondition)
		c := metav1.Condition{Type: v1alpha1.ProgressingCondition, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: in.Generation, LastTransitionTime: metav1.NewTime(in.Now)}
		if cur != nil && !touch && cur.Status == status && cur.Reason == reason {
			c.LastTransitionTime = cur.LastTransitionTime
		}
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ProgressingCondition)
		meta.SetStatusCondition(&st.Conditions, c)
	}
	cur := func() *metav1.Condition {
		return meta.FindStatusCondition(st.Conditions, v1alpha1.ProgressingCondition)
	}
	subject := "MachineDeployment"
	if in.NewSet != "" {
		subject = "MachineSet " + in.NewSet
	}

	if in.Paused {
		// A stuck rollout stays reported as stuck, even paused.
		if c := cur(); c == nil || (c.Reason != reasonDeadlineExceeded && c.Reason != reasonPaused) {
			set(metav1.ConditionUnknown, reasonPaused, "the MachineDeployment is paused: no rollout until it is resumed", true)
		}
		return 0
	}
	if c := cur(); c != nil && c.Reason == reasonPaused {
		// The deadline counts from the resume, not from before the pause.
		set(metav1.ConditionUnknown, reasonResumed, "the MachineDeployment is resumed", true)
	}
	if in.Failed != "" {
		set(metav1.ConditionFalse, reasonInPlaceFailed, subject+": "+in.Failed, false)
		return 0
	}
	switch {
	case in.CreatedNewSet:
		set(metav1.ConditionTrue, reasonNewSetCreated, "created "+subject, true)
	case in.NewSet != "" && cur() == nil:
		set(metav1.ConditionTrue, reasonFoundNewSet, "found "+subject, true)
	}

	complete := st.UpdatedReplicas == in.Replicas && st.Replicas == in.Replicas &&
		st.AvailableReplicas == in.Replicas && st.ObservedGeneration >= in.Generation
	if c := cur(); !(st.Replicas == st.UpdatedReplicas && c != nil && c.Reason == reasonNewSetAvailable) {
		switch {
		case complete:
			set(metav1.ConditionTrue, reasonNewSetAvailable, subject+" has successfully progressed", false)
		case progressed(in.Old, *st):
			set(metav1.ConditionTrue, reasonSetUpdated, subject+" is progressing", true)
		case timedOut(cur(), in.Deadline, in.Now):
			msg := subject + " has not progressed for progressDeadlineSeconds"
			if in.Awaiting != "" {
				msg += ": " + in.Awaiting
			}
			set(metav1.ConditionFalse, reasonDeadlineExceeded, msg, false)
		}
	}

	c := cur()
	if in.Deadline == nil || complete || c == nil || c.Status == metav1.ConditionFalse || c.Reason == reasonNewSetAvailable {
		return 0
	}
	// A little past the deadline, so that the next look finds it passed.
	return max(deadlineOf(c, *in.Deadline).Sub(in.Now), 0) + 100*time.Millisecond
}

// deadlineOf is when the rollout times out: deadline after the last
// progress, counted from the end of the second the condition records
// (the API keeps whole seconds), so that it is never declared early.
func deadlineOf(c *metav1.Condition, deadline time.Duration) time.Time {
	return c.LastTransitionTime.Truncate(time.Second).Add(time.Second + deadline)
}

// progressed reports whether the rollout moved since the old status: more
// updated, ready or available Machines, or fewer old ones.
func progressed(old, cur v1alpha1.MachineDeploymentStatus) bool {
	return cur.UpdatedReplicas > old.UpdatedReplicas ||
		cur.Replicas-cur.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		cur.ReadyReplicas > old.ReadyReplicas ||
		cur.AvailableReplicas > old.AvailableReplicas
}

func timedOut(c *metav1.Condition, deadline *time.Duration, now time.Time) bool {
	switch {
	case c == nil || c.Reason == reasonNewSetAvailable:
		return false
	case c.Reason == reasonDeadlineExceeded:
		return true
	case deadline == nil:
		return false
	}
	return !now.Before(deadlineOf(c, *deadline))
}

// availableCondition is True while at least replicas − maxUnavailable
// Machines are available.
func availableCondition(st *v1alpha1.MachineDeploymentStatus, replicas, maxUnavailable int32) (metav1.ConditionStatus, string, string) {
	if minAvailable := replicas - maxUnavailable; st.AvailableReplicas < minAvailable {
		return metav1.ConditionFalse, reasonMinimumUnavailable,
			"fewer Machines available than replicas − maxUnavailable"
	}
	return metav1.ConditionTrue, reasonMinimumAvailable, "at least replicas − maxUnavailable Machines are available"
}
