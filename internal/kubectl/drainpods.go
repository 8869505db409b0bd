package kubectl

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leavingPod is a pod the drain has to move off a Node, and the
// PodDisruptionBudgets that allow no disruption of it now.
type leavingPod struct {
	pod      *corev1.Pod
	blockers []string // namespace/name of budgets with disruptionsAllowed 0
}

// mustLeave lists the pods the drain has to move off the Node, with the
// budgets blocking each: every pod but DaemonSet and mirror pods (they
// stay) and finished ones (they count as gone), as the drain decides in
// internal/drain (docs/machine-phases.md, Terminating).
func mustLeave(ctx context.Context, c client.Client, nodeName string) ([]leavingPod, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.MatchingFields{"spec.nodeName": nodeName}); err != nil {
		return nil, err
	}
	budgets := map[string][]policyv1.PodDisruptionBudget{}
	var out []leavingPod
	for i := range pods.Items {
		p := &pods.Items[i]
		if stays(p) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		list, ok := budgets[p.Namespace]
		if !ok {
			l := &policyv1.PodDisruptionBudgetList{}
			if err := c.List(ctx, l, client.InNamespace(p.Namespace)); err != nil && !skippable(err) {
				return nil, err
			}
			list, budgets[p.Namespace] = l.Items, l.Items
		}
		lp := leavingPod{pod: p}
		for _, b := range list {
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if b.Status.DisruptionsAllowed < 1 {
				lp.blockers = append(lp.blockers, b.Namespace+"/"+b.Name)
			}
		}
		out = append(out, lp)
	}
	sort.Slice(out, func(i, j int) bool { return podName(out[i].pod) < podName(out[j].pod) })
	return out, nil
}

// stays reports a pod the drain leaves on the Node: a DaemonSet's or a
// static pod's mirror.
func stays(p *corev1.Pod) bool {
	if _, ok := p.Annotations["kubernetes.io/config.mirror"]; ok {
		return true
	}
	owner := metav1.GetControllerOf(p)
	return owner != nil && owner.Kind == "DaemonSet"
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// summary says in one line which pods are left and what blocks them.
func summary(pods []leavingPod) string {
	if len(pods) == 0 {
		return "no pod left to move"
	}
	var parts []string
	for _, lp := range pods {
		s := podName(lp.pod)
		switch {
		case lp.pod.DeletionTimestamp != nil:
			s += " (terminating)"
		case len(lp.blockers) > 0:
			s += " (blocked by PodDisruptionBudget " + strings.Join(lp.blockers, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d pod(s) still on the Node: %s", len(pods), strings.Join(parts, "; "))
}
