package drain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Rule is a MachineDrainRule that selects the Machine being drained, with
// its pod selectors parsed. The drain applies the first Rule, by name, that
// selects a pod (docs/drain.md).
type Rule struct {
	// Name is the MachineDrainRule's name.
	Name string
	// Behavior is what the drain does with the pods the rule selects.
	Behavior v1alpha1.DrainBehavior
	// Order is the eviction order of the pods, for Behavior Drain.
	Order int32

	// pods are alternatives; none selects every pod.
	pods []podSelector
}

// podSelector selects pods by their labels and their namespace's labels.
type podSelector struct {
	pod, namespace labels.Selector // nil selects everything
}

// MachineRules lists the MachineDrainRules of m's namespace and returns
// those selecting m, as RulesFor does: what the machine controller drains
// by and what kubectl millwright drain status shows.
func MachineRules(ctx context.Context, c client.Reader, m *v1alpha1.Machine) ([]Rule, error) {
	var list v1alpha1.MachineDrainRuleList
	if err := c.List(ctx, &list, client.InNamespace(m.Namespace)); err != nil {
		return nil, fmt.Errorf("listing MachineDrainRules: %w", err)
	}
	return RulesFor(list.Items, m.Labels)
}

// RulesFor returns the rules that select a Machine labelled machineLabels,
// sorted by name, which is their precedence. An error names a rule whose
// selector does not parse; admission refuses those, so it means a schema
// was bypassed, and the drain must not guess what the rule meant.
func RulesFor(rules []v1alpha1.MachineDrainRule, machineLabels map[string]string) ([]Rule, error) {
	var out []Rule
	for i := range rules {
		mdr := &rules[i]
		ok, err := selectsMachine(mdr, labels.Set(machineLabels))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		r := Rule{Name: mdr.Name, Behavior: mdr.Spec.Drain.Behavior}
		if mdr.Spec.Drain.Order != nil {
			r.Order = *mdr.Spec.Drain.Order
		}
		for _, ps := range mdr.Spec.Pods {
			pod, err := parseSelector(mdr.Name, ps.Selector)
			if err != nil {
				return nil, err
			}
			ns, err := parseSelector(mdr.Name, ps.NamespaceSelector)
			if err != nil {
				return nil, err
			}
			r.pods = append(r.pods, podSelector{pod: pod, namespace: ns})
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Rule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// selectsMachine reports whether any of the rule's Machine selectors
// matches; a rule without one selects every Machine of its namespace.
func selectsMachine(mdr *v1alpha1.MachineDrainRule, machineLabels labels.Set) (bool, error) {
	if len(mdr.Spec.Machines) == 0 {
		return true, nil
	}
	for _, ms := range mdr.Spec.Machines {
		sel, err := parseSelector(mdr.Name, ms.Selector)
		if err != nil {
			return false, err
		}
		if sel == nil || sel.Matches(machineLabels) {
			return true, nil
		}
	}
	return false, nil
}

// parseSelector parses s; nil (select everything) when s is nil.
func parseSelector(rule string, s *v1alpha1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s.AsMetav1())
	if err != nil {
		return nil, fmt.Errorf("MachineDrainRule %s: %w", rule, err)
	}
	return sel, nil
}

// needNamespaces reports whether a rule selects pods by namespace labels,
// the only reason a Step reads Namespaces.
func needNamespaces(rules []Rule) bool {
	for _, r := range rules {
		for _, ps := range r.pods {
			if ps.namespace != nil {
				return true
			}
		}
	}
	return false
}

// selects reports whether the rule selects pod, whose namespace has the
// labels nsLabels.
func (r Rule) selects(pod *corev1.Pod, nsLabels labels.Set) bool {
	if len(r.pods) == 0 {
		return true
	}
	for _, ps := range r.pods {
		if (ps.pod == nil || ps.pod.Matches(labels.Set(pod.Labels))) &&
			(ps.namespace == nil || ps.namespace.Matches(nsLabels)) {
			return true
		}
	}
	return false
}

// decision is what the rules decide for one pod.
type decision struct {
	behavior v1alpha1.DrainBehavior
	order    int32
	// conflict, when set, says which rules selected the pod with different
	// decisions and which one applies.
	conflict string
}

// decide applies the pod's drain label, or else the first rule that
// selects it; a pod nothing selects is drained with order 0.
func decide(pod *corev1.Pod, rules []Rule, nsLabels labels.Set) decision {
	switch pod.Labels[v1alpha1.DrainLabel] {
	case v1alpha1.DrainLabelSkip:
		return decision{behavior: v1alpha1.DrainBehaviorSkip}
	case v1alpha1.DrainLabelWaitCompleted:
		return decision{behavior: v1alpha1.DrainBehaviorWaitCompleted}
	}
	var first *Rule
	var others []string
	for i := range rules {
		r := &rules[i]
		if !r.selects(pod, nsLabels) {
			continue
		}
		if first == nil {
			first = r
			continue
		}
		if r.Behavior != first.Behavior || r.Order != first.Order {
			others = append(others, r.Name)
		}
	}
	if first == nil {
		return decision{behavior: v1alpha1.DrainBehaviorDrain}
	}
	d := decision{behavior: first.Behavior, order: first.Order}
	if len(others) > 0 {
		d.conflict = fmt.Sprintf("MachineDrainRules %s and %s select pod %s; %s applies (first by name)",
			first.Name, strings.Join(others, ", "), podKey(pod), first.Name)
	}
	return d
}
