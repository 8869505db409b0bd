package drain

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func labelled(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// rule builds a MachineDrainRule selecting pods labelled app=<app> (every
// pod when app is empty) on Machines labelled pool=<pool> (every Machine
// when pool is empty).
func rule(name, pool, app string, behavior v1alpha1.DrainBehavior, order *int32) v1alpha1.MachineDrainRule {
	r := v1alpha1.MachineDrainRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.MachineDrainRuleSpec{Drain: v1alpha1.MachineDrainRuleDrainConfig{Behavior: behavior, Order: order}},
	}
	if pool != "" {
		r.Spec.Machines = []v1alpha1.MachineDrainRuleMachineSelector{{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}}}
	}
	if app != "" {
		r.Spec.Pods = []v1alpha1.MachineDrainRulePodSelector{{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	}
	return r
}

func mustRules(t *testing.T, machineLabels map[string]string, rules ...v1alpha1.MachineDrainRule) []Rule {
	t.Helper()
	out, err := RulesFor(rules, machineLabels)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRulesForSelectsMachinesAndSortsByName(t *testing.T) {
	rules := mustRules(t, map[string]string{"pool": "gpu"},
		rule("z-all", "", "", v1alpha1.DrainBehaviorDrain, ptr.To[int32](1)),
		rule("web", "web", "", v1alpha1.DrainBehaviorSkip, nil),
		rule("a-gpu", "gpu", "", v1alpha1.DrainBehaviorWaitCompleted, nil),
	)
	var names []string
	for _, r := range rules {
		names = append(names, r.Name)
	}
	if want := []string{"a-gpu", "z-all"}; !slices.Equal(names, want) {
		t.Errorf("rules for a gpu Machine: %v, want %v", names, want)
	}
}

func TestDecidePrecedence(t *testing.T) {
	rules := mustRules(t, nil,
		rule("b-db", "", "db", v1alpha1.DrainBehaviorDrain, ptr.To[int32](2)),
		rule("a-db", "", "db", v1alpha1.DrainBehaviorDrain, ptr.To[int32](1)),
		rule("c-log", "", "log", v1alpha1.DrainBehaviorSkip, nil),
	)
	cases := []struct {
		name     string
		pod      corev1.Pod
		behavior v1alpha1.DrainBehavior
		order    int32
		conflict bool
	}{
		{"no rule selects it", pod("ns", "x", labelled("app", "web")), v1alpha1.DrainBehaviorDrain, 0, false},
		{"first rule by name wins and the conflict is reported", pod("ns", "db", labelled("app", "db")), v1alpha1.DrainBehaviorDrain, 1, true},
		{"skip rule", pod("ns", "log", labelled("app", "log")), v1alpha1.DrainBehaviorSkip, 0, false},
		{"label skip overrides the rules", pod("ns", "db2", labelled("app", "db", v1alpha1.DrainLabel, "skip")), v1alpha1.DrainBehaviorSkip, 0, false},
		{"label wait-completed overrides the rules", pod("ns", "log2", labelled("app", "log", v1alpha1.DrainLabel, "wait-completed")), v1alpha1.DrainBehaviorWaitCompleted, 0, false},
		{"an unknown label value is ignored", pod("ns", "log3", labelled("app", "log", v1alpha1.DrainLabel, "never")), v1alpha1.DrainBehaviorSkip, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(&tc.pod, rules, nil)
			if d.behavior != tc.behavior || d.order != tc.order || (d.conflict != "") != tc.conflict {
				t.Errorf("decision %+v, want behavior %s order %d conflict %v", d, tc.behavior, tc.order, tc.conflict)
			}
		})
	}
}

func TestDecideNamespaceSelector(t *testing.T) {
	r := rule("sys", "", "", v1alpha1.DrainBehaviorSkip, nil)
	r.Spec.Pods = []v1alpha1.MachineDrainRulePodSelector{{NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"tier": "system"}}}}
	rules := mustRules(t, nil, r)
	if !needNamespaces(rules) {
		t.Fatal("a namespace selector must make the Step read namespaces")
	}
	p := pod("kube-system", "dns")
	if d := decide(&p, rules, labels.Set{"tier": "system"}); d.behavior != v1alpha1.DrainBehaviorSkip {
		t.Errorf("pod in a system namespace: %s, want Skip", d.behavior)
	}
	if d := decide(&p, rules, labels.Set{"tier": "apps"}); d.behavior != v1alpha1.DrainBehaviorDrain {
		t.Errorf("pod in another namespace: %s, want Drain", d.behavior)
	}
}

// TestPlanEvictsOnlyTheLowestOrder: pods of a later order are not evicted
// while one of an earlier order is on the Node, even terminating.
func TestPlanEvictsOnlyTheLowestOrder(t *testing.T) {
	rules := mustRules(t, nil,
		rule("first", "", "cache", v1alpha1.DrainBehaviorDrain, ptr.To[int32](1)),
		rule("second", "", "db", v1alpha1.DrainBehaviorDrain, ptr.To[int32](2)),
		rule("skip", "", "log", v1alpha1.DrainBehaviorSkip, nil),
		rule("wait", "", "job", v1alpha1.DrainBehaviorWaitCompleted, nil),
	)
	pods := []corev1.Pod{
		pod("ns", "cache-0", labelled("app", "cache")),
		pod("ns", "cache-1", labelled("app", "cache"), deleting(30)),
		pod("ns", "db-0", labelled("app", "db")),
		pod("ns", "db-1", labelled("app", "db"), claim("d")),
		pod("ns", "log", labelled("app", "log")),
		pod("ns", "job", labelled("app", "job")),
		pod("ns", "web", labelled("app", "web")),
	}
	p := newPlan(pods, rules, nil)
	if !p.hasCurrent || p.current != 0 {
		t.Fatalf("current order %d (%v), want 0: the pod no rule selects", p.current, p.hasCurrent)
	}
	if got := keys(p.toEvict()); !slices.Equal(got, []string{"ns/web"}) {
		t.Errorf("order 0 evicts %v, want [ns/web]", got)
	}

	p = newPlan(slices.Delete(slices.Clone(pods), 6, 7), rules, nil)
	if p.current != 1 {
		t.Fatalf("current order %d, want 1", p.current)
	}
	if got := keys(p.toEvict()); !slices.Equal(got, []string{"ns/cache-0"}) {
		t.Errorf("order 1 evicts %v, want [ns/cache-0]", got)
	}
	if p.nextVolumePod() != nil {
		t.Errorf("order 1 evicts the order-2 pod with volumes %s", p.nextVolumePod().Name)
	}
	if got := p.blocking(); !slices.Equal(got, []string{"ns/cache-0", "ns/cache-1", "ns/job"}) {
		t.Errorf("blocking %v", got)
	}
	if p.mustLeave() != 5 || len(p.skipped) != 1 {
		t.Errorf("must leave %d (want 5: 2 cache, 2 db, the job), skipped %d (want 1)", p.mustLeave(), len(p.skipped))
	}

	// The terminating order-1 pod alone still holds order 2 back.
	p = newPlan([]corev1.Pod{pods[1], pods[2], pods[3]}, rules, nil)
	if p.current != 1 || len(p.toEvict()) != 0 || p.nextVolumePod() != nil {
		t.Errorf("with an order-1 pod terminating: order %d, evicts %v, volume pod %v; want order 1 and nothing", p.current, keys(p.toEvict()), p.nextVolumePod() != nil)
	}

	p = newPlan([]corev1.Pod{pods[2], pods[3], pods[5]}, rules, nil)
	if got := keys(p.toEvict()); p.current != 2 || !slices.Equal(got, []string{"ns/db-0"}) || p.nextVolumePod() == nil {
		t.Errorf("order 2 evicts %v (volume pod: %v), want ns/db-0 and the pod with volumes ns/db-1", got, p.nextVolumePod() != nil)
	}
	for _, pod := range p.toForce() {
		if pod.Name == "job" {
			return
		}
	}
	t.Error("a forced drain must delete the pods it would wait for too")
}

func TestRulesForRefusesABrokenSelector(t *testing.T) {
	r := rule("broken", "", "", v1alpha1.DrainBehaviorSkip, nil)
	r.Spec.Pods = []v1alpha1.MachineDrainRulePodSelector{{Selector: &v1alpha1.LabelSelector{
		MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}},
	}}}
	_, err := RulesFor([]v1alpha1.MachineDrainRule{r}, nil)
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("error %v, want one naming the rule", err)
	}
}
