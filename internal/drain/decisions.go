package drain

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// PodDecision is what the drain does with one pod of a Node.
type PodDecision struct {
	// Pod is the pod.
	Pod *corev1.Pod
	// Behavior is Drain (evicted), Skip (left on the Node) or
	// WaitCompleted (waited for, never evicted).
	Behavior v1alpha1.DrainBehavior
	// Order is the pod's eviction order, for Behavior Drain.
	Order int32
}

// Decisions lists the pods on the Node named nodeName that Step does not
// leave alone by their kind (DaemonSet and mirror pods stay, finished
// pods count as gone) and says what Step does with each under rules, the
// MachineDrainRules selecting the Machine (RulesFor): the same plan Step
// makes, for tools that show a drain (docs/drain.md). They are sorted by
// namespace/name.
func Decisions(ctx context.Context, c client.Client, nodeName string, rules []Rule) ([]PodDecision, error) {
	p, err := nodePlan(ctx, c, nodeName, rules)
	if err != nil {
		return nil, err
	}
	out := make([]PodDecision, 0, len(p.skipped)+p.mustLeave())
	for _, pod := range p.skipped {
		out = append(out, PodDecision{Pod: pod, Behavior: v1alpha1.DrainBehaviorSkip})
	}
	for _, list := range [][]*corev1.Pod{p.plain, p.volumes} {
		for _, pod := range list {
			out = append(out, PodDecision{Pod: pod, Behavior: v1alpha1.DrainBehaviorDrain, Order: p.order[pod]})
		}
	}
	for _, pod := range p.waits {
		out = append(out, PodDecision{Pod: pod, Behavior: v1alpha1.DrainBehaviorWaitCompleted})
	}
	return out, nil
}

// nodePlan lists the Node's pods, and the namespaces' labels when a rule
// selects pods by them, and plans what the drain does with each pod.
func nodePlan(ctx context.Context, c client.Client, nodeName string, rules []Rule) (plan, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingFields{PodNodeNameIndex: nodeName}); err != nil {
		return plan{}, fmt.Errorf("listing pods on node %s: %w", nodeName, err)
	}
	var namespaces map[string]labels.Set
	if needNamespaces(rules) {
		var err error
		if namespaces, err = namespaceLabels(ctx, c); err != nil {
			return plan{}, err
		}
	}
	return newPlan(pods.Items, rules, namespaces), nil
}
