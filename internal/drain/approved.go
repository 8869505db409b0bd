package drain

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Eviction API decides in two writes: it records the pod in its
// PodDisruptionBudget's status.disruptedPods (the budget's allowance goes
// down by one), then deletes the pod. When its caller goes away in
// between (a manager killed mid-call: the API server aborts the request),
// the approval stays and the pod keeps running. The disruption controller
// then counts the pod as disrupted for two minutes, so the budget refuses
// every other eviction, this pod's included, for that long; a drain that
// only retried would see refusals, and after MaxEvictRetries delete pods
// past the budget. Instead the drain carries out the approval: the pod is
// already counted as gone, so deleting it takes nothing more from its
// budget (docs/drain.md, "An approved eviction left undone").

// approvalWindow is how long after its approval the drain still carries
// out an eviction itself. The disruption controller counts an approved pod
// as disrupted for two minutes (its DeletionTimeout), deleted or not; the
// other minute is room for clocks that disagree, so that a pod the
// controller counts as healthy again is never taken for an approved one.
const approvalWindow = time.Minute

// approvedEviction reports whether the Eviction API approved pod's
// eviction less than approvalWindow before now without deleting it: the
// pod's one PodDisruptionBudget lists it in status.disruptedPods since the
// pod was created (an approval of an earlier pod of the same name, a
// StatefulSet's, does not count; both times are in whole seconds). A budget that cannot be read
// means no: the eviction is retried as refused.
func approvedEviction(ctx context.Context, c client.Client, pod *corev1.Pod, now time.Time) bool {
	list := &policyv1.PodDisruptionBudgetList{}
	if err := c.List(ctx, list, client.InNamespace(pod.Namespace)); err != nil {
		return false
	}
	var budget *policyv1.PodDisruptionBudget
	for i := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(list.Items[i].Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if budget != nil {
			// The Eviction API evicts no pod that two budgets select.
			return false
		}
		budget = &list.Items[i]
	}
	if budget == nil {
		return false
	}
	at, ok := budget.Status.DisruptedPods[pod.Name]
	return ok && !at.Before(&pod.CreationTimestamp) && now.Sub(at.Time) < approvalWindow
}
