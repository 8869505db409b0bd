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

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
)

// leavingPod is a pod the drain has to move off a Node, what the drain
// does with it, and the PodDisruptionBudgets that allow no disruption of
// it now.
type leavingPod struct {
	pod *corev1.Pod
	// waits: the drain waits for the pod to complete and never evicts it
	// (behavior WaitCompleted); otherwise it evicts it in order.
	waits    bool
	order    int32
	blockers []string // namespace/name of budgets with disruptionsAllowed 0
}

// drainPods is what the drain of a Node has left: the pods it has to move,
// evicted ones by order then name and those it waits to complete last, and
// the pods a MachineDrainRule or their drain label makes it skip.
type drainPods struct {
	leaving []leavingPod
	skipped []string // namespace/name
}

// mustLeave says which pods the drain of the Machine's Node has to move,
// with the budgets blocking each, and which it skips. It reads the
// MachineDrainRules of the Machine's namespace that select it and lets
// internal/drain decide each pod, as the machine controller does: DaemonSet
// and mirror pods stay, finished pods count as gone (docs/drain.md).
func mustLeave(ctx context.Context, c client.Client, m *v1alpha1.Machine, nodeName string) (drainPods, error) {
	rules, err := drain.MachineRules(ctx, c, m)
	if err != nil {
		return drainPods{}, err
	}
	decisions, err := drain.Decisions(ctx, c, nodeName, rules)
	if err != nil {
		return drainPods{}, err
	}
	budgets := map[string][]policyv1.PodDisruptionBudget{}
	var out drainPods
	for _, d := range decisions {
		p := d.Pod
		if d.Behavior == v1alpha1.DrainBehaviorSkip {
			out.skipped = append(out.skipped, podName(p))
			continue
		}
		lp := leavingPod{pod: p, waits: d.Behavior == v1alpha1.DrainBehaviorWaitCompleted, order: d.Order}
		if !lp.waits {
			list, ok := budgets[p.Namespace]
			if !ok {
				l := &policyv1.PodDisruptionBudgetList{}
				if err := c.List(ctx, l, client.InNamespace(p.Namespace)); err != nil && !skippable(err) {
					return drainPods{}, err
				}
				list, budgets[p.Namespace] = l.Items, l.Items
			}
			for _, b := range list {
				sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
				if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
					continue
				}
				if b.Status.DisruptionsAllowed < 1 {
					lp.blockers = append(lp.blockers, b.Namespace+"/"+b.Name)
				}
			}
		}
		out.leaving = append(out.leaving, lp)
	}
	sort.SliceStable(out.leaving, func(i, j int) bool {
		a, b := out.leaving[i], out.leaving[j]
		if a.waits != b.waits {
			return b.waits
		}
		if a.order != b.order {
			return a.order < b.order
		}
		return podName(a.pod) < podName(b.pod)
	})
	sort.Strings(out.skipped)
	return out, nil
}

// current is the order the drain evicts now: the lowest order of the pods
// it evicts, or false when it has none left to evict.
func (d drainPods) current() (int32, bool) {
	for _, lp := range d.leaving {
		if !lp.waits {
			return lp.order, true // leaving is sorted by order
		}
	}
	return 0, false
}

// blockedBy says what keeps the drain from moving lp now: a lower order
// still on the Node, the budgets allowing no disruption, or, for a pod it
// waits for, the pod's own completion.
func (d drainPods) blockedBy(lp leavingPod) string {
	if lp.waits {
		return "waits for completion"
	}
	var why []string
	if cur, ok := d.current(); ok && lp.order > cur {
		why = append(why, fmt.Sprintf("order %d first", cur))
	}
	if len(lp.blockers) > 0 {
		why = append(why, "PodDisruptionBudget "+strings.Join(lp.blockers, ", ")+" (0 disruptions allowed)")
	}
	if len(why) == 0 {
		return "-"
	}
	return strings.Join(why, "; ")
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// summary says in one line which pods are left and what blocks them.
func summary(d drainPods) string {
	if len(d.leaving) == 0 {
		return "no pod left to move"
	}
	var parts []string
	for _, lp := range d.leaving {
		s := podName(lp.pod)
		switch {
		case lp.pod.DeletionTimestamp != nil:
			s += " (terminating)"
		case lp.waits:
			s += " (waits for completion)"
		case len(lp.blockers) > 0:
			s += " (blocked by PodDisruptionBudget " + strings.Join(lp.blockers, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d pod(s) still on the Node: %s", len(d.leaving), strings.Join(parts, "; "))
}
