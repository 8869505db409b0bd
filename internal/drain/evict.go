package drain

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// parallelism bounds the API calls a Step makes at once: enough to drain a
// full Node in one round, few enough not to flood the API server.
const parallelism = 8

// outcome is what became of one pod in a round.
type outcome int

const (
	// outEvicted: the Eviction API accepted; the kubelet terminates the pod.
	outEvicted outcome = iota
	// outDeleted: the pod was deleted (a budget refused for too long, or forced).
	outDeleted
	// outBlocked: a PodDisruptionBudget refused the eviction (HTTP 429).
	outBlocked
	// outGone: the pod no longer exists, or was replaced by one of the same
	// name (see conflicted).
	outGone
	// outFailed: the API call failed otherwise; it is retried next round.
	outFailed
)

// task is one pod to act on in a round.
type task struct {
	pod *corev1.Pod
	// force deletes with grace period 0 instead of evicting.
	force bool
	// deleteIfRefused deletes the pod when a budget refuses its eviction:
	// the refused rounds are used up.
	deleteIfRefused bool
	// now is the Step's clock, against which an earlier approval of the
	// pod's eviction is dated (approvedEviction).
	now time.Time
}

// taskResult is the outcome of a task.
type taskResult struct {
	out outcome
	// refused: a budget refused the eviction (the pod may then have been deleted).
	refused bool
	err     error
}

// runTasks carries out tasks with bounded parallelism and returns their
// results in the same order.
func runTasks(ctx context.Context, c client.Client, tasks []task) []taskResult {
	results := make([]taskResult, len(tasks))
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = runTask(ctx, c, tasks[i])
		}()
	}
	wg.Wait()
	return results
}

// runTask evicts or deletes one pod. Every call is bound to the pod's UID,
// so a pod recreated under the same name (a StatefulSet's) is never hit by
// a decision made about its predecessor.
func runTask(ctx context.Context, c client.Client, t task) taskResult {
	if t.force {
		return deletePod(ctx, c, t.pod, true, DisruptionReason, deletedInstead+"the drain of its Node was forced")
	}
	uid := t.pod.UID
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: t.pod.Namespace, Name: t.pod.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	err := c.SubResource("eviction").Create(ctx, t.pod.DeepCopy(), eviction)
	switch {
	case err == nil:
		return taskResult{out: outEvicted}
	case apierrors.IsNotFound(err):
		return taskResult{out: outGone}
	case apierrors.IsConflict(err):
		return conflicted(ctx, c, t.pod, err)
	case apierrors.IsTooManyRequests(err) && approvedEviction(ctx, c, t.pod, t.now):
		r := deletePod(ctx, c, t.pod, false, ApprovedEvictionReason,
			"Millwright's drain deleted the pod to carry out its eviction, which the Eviction API approved and counted against its PodDisruptionBudget (status.disruptedPods) but did not finish")
		if r.out == outDeleted {
			r.out = outEvicted
		}
		return r
	case apierrors.IsTooManyRequests(err):
		if !t.deleteIfRefused {
			return taskResult{out: outBlocked, refused: true, err: err}
		}
		r := deletePod(ctx, c, t.pod, false, DisruptionReason, deletedInstead+"its PodDisruptionBudget refused its eviction for every round the drain allows")
		r.refused = true
		return r
	default:
		return taskResult{out: outFailed, err: err}
	}
}

// DisruptionReason is the reason of the DisruptionTarget condition a drain
// writes on a pod it deletes instead of evicting: a budget refused its
// eviction too long, or the drain was forced. An evicted pod gets the API
// server's own (EvictionByEvictionAPI).
const DisruptionReason = "DeletionByMillwrightDrain"

// ApprovedEvictionReason is the reason of the DisruptionTarget condition a
// drain writes on a pod whose eviction the Eviction API approved but did
// not carry out (approvedEviction): the deletion is within the budget.
const ApprovedEvictionReason = "EvictionCompletedByMillwrightDrain"

// deletedInstead begins the condition's message of a pod deleted past its
// budget.
const deletedInstead = "Millwright deleted the pod instead of evicting it: "

// deletePod deletes the pod, with grace period 0 when forced (the API server
// then removes it at once, without waiting for the kubelet) and with the
// pod's own grace period otherwise. It first marks the pod with the
// DisruptionTarget condition (reason, message), as Kubernetes' own
// controllers do before they delete a pod for a disruption: a Job's pod
// failure policy, and whoever reads the pod, can tell this deletion from a
// failure, and why it was not an eviction.
func deletePod(ctx context.Context, c client.Client, pod *corev1.Pod, force bool, reason, message string) taskResult {
	if gone := markDisruptionTarget(ctx, c, pod, reason, message); gone {
		return taskResult{out: outGone}
	}
	uid := pod.UID
	opts := []client.DeleteOption{client.Preconditions{UID: &uid}}
	if force {
		opts = append(opts, client.GracePeriodSeconds(0))
	}
	err := c.Delete(ctx, pod.DeepCopy(), opts...)
	switch {
	case err == nil:
		return taskResult{out: outDeleted}
	case apierrors.IsNotFound(err):
		return taskResult{out: outGone}
	case apierrors.IsConflict(err):
		return conflicted(ctx, c, pod, err)
	default:
		return taskResult{out: outFailed, err: err}
	}
}

// conflicted decides what a 409 Conflict answer to an eviction or a
// deletion means, by reading the pod again. The UID precondition fails
// with 409 when the pod of that name is another one (a StatefulSet's
// successor): the pod is gone. But the Eviction API also answers 409 when
// it could not update the budget's status for concurrent evictions; then
// the pod is still there and running, and the call failed, to be retried
// next round: a drain never ends with a pod still running (docs/drain.md).
func conflicted(ctx context.Context, c client.Client, pod *corev1.Pod, callErr error) taskResult {
	now := &corev1.Pod{}
	err := c.Get(ctx, client.ObjectKeyFromObject(pod), now)
	switch {
	case apierrors.IsNotFound(err):
		return taskResult{out: outGone}
	case err != nil:
		return taskResult{out: outFailed, err: fmt.Errorf("%w (and reading the pod again: %w)", callErr, err)}
	case now.UID != pod.UID:
		return taskResult{out: outGone}
	default:
		return taskResult{out: outFailed, err: callErr}
	}
}

// markDisruptionTarget sets the pod's DisruptionTarget condition with a
// patch of its status, and reports whether the pod is gone. Any other
// failure is left to the deletion that follows: the condition informs, it
// must not hold a drain back.
func markDisruptionTarget(ctx context.Context, c client.Client, pod *corev1.Pod, reason, message string) (gone bool) {
	marked := pod.DeepCopy()
	cond := corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason,
		Message: message, LastTransitionTime: metav1.Now(),
	}
	if i := slices.IndexFunc(marked.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == cond.Type }); i >= 0 {
		marked.Status.Conditions[i] = cond
	} else {
		marked.Status.Conditions = append(marked.Status.Conditions, cond)
	}
	err := c.Status().Patch(ctx, marked, client.StrategicMergeFrom(pod))
	return apierrors.IsNotFound(err)
}
