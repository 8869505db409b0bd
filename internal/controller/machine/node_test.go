package machine

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func lastApplied(t *testing.T, s nodeState) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestApplyNodeTemplateMergesThreeWays(t *testing.T) {
	noSchedule := func(key, value string) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
	}
	uninitialized := noSchedule(v1alpha1.UninitializedTaintKey, "")
	cases := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		taints      []corev1.Taint
		last        *nodeState
		desired     nodeState
		wantLabels  map[string]string
		wantTaints  []corev1.Taint
	}{
		{
			name:       "first sync adds the template and keeps what the kubelet set",
			labels:     map[string]string{"kubernetes.io/hostname": "n1"},
			desired:    nodeState{Labels: map[string]string{"role": "worker"}},
			wantLabels: map[string]string{"kubernetes.io/hostname": "n1", "role": "worker"},
		},
		{
			name:       "a label Millwright applied and the template dropped is removed",
			labels:     map[string]string{"role": "worker", "pool": "a", "kubernetes.io/hostname": "n1"},
			last:       &nodeState{Labels: map[string]string{"role": "worker", "pool": "a"}},
			desired:    nodeState{Labels: map[string]string{"role": "worker"}},
			wantLabels: map[string]string{"role": "worker", "kubernetes.io/hostname": "n1"},
		},
		{
			name:       "a label someone else added is kept even when not in the template",
			labels:     map[string]string{"role": "worker", "team": "payments"},
			last:       &nodeState{Labels: map[string]string{"role": "worker"}},
			desired:    nodeState{Labels: map[string]string{"role": "worker"}},
			wantLabels: map[string]string{"role": "worker", "team": "payments"},
		},
		{
			name:       "a changed value is overwritten",
			labels:     map[string]string{"role": "batch"},
			last:       &nodeState{Labels: map[string]string{"role": "worker"}},
			desired:    nodeState{Labels: map[string]string{"role": "web"}},
			wantLabels: map[string]string{"role": "web"},
		},
		{
			name:       "taints: template added, dropped removed, foreign kept, uninitialized removed",
			taints:     []corev1.Taint{uninitialized, noSchedule("old", "x"), noSchedule("node.kubernetes.io/not-ready", "")},
			last:       &nodeState{Taints: []corev1.Taint{noSchedule("old", "x")}},
			desired:    nodeState{Taints: []corev1.Taint{noSchedule("dedicated", "gpu")}},
			wantTaints: []corev1.Taint{noSchedule("node.kubernetes.io/not-ready", ""), noSchedule("dedicated", "gpu")},
		},
		{
			name:       "a taint whose value changed is replaced in place",
			taints:     []corev1.Taint{noSchedule("dedicated", "cpu")},
			last:       &nodeState{Taints: []corev1.Taint{noSchedule("dedicated", "cpu")}},
			desired:    nodeState{Taints: []corev1.Taint{noSchedule("dedicated", "gpu")}},
			wantTaints: []corev1.Taint{noSchedule("dedicated", "gpu")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: tc.labels, Annotations: tc.annotations}}
			node.Spec.Taints = tc.taints
			if tc.last != nil {
				node.Annotations = map[string]string{v1alpha1.NodeLastAppliedTemplateAnnotation: lastApplied(t, *tc.last)}
			}
			refs := map[string]string{v1alpha1.NodeMachineAnnotation: "m1", v1alpha1.NodeClusterNamespaceAnnotation: "ns"}
			if !applyNodeTemplate(node, tc.desired, refs) {
				t.Fatal("applyNodeTemplate reported no change")
			}
			if tc.wantLabels != nil && !equalMaps(node.Labels, tc.wantLabels) {
				t.Errorf("labels = %v; want %v", node.Labels, tc.wantLabels)
			}
			if tc.wantTaints != nil && lastApplied(t, nodeState{Taints: node.Spec.Taints}) != lastApplied(t, nodeState{Taints: tc.wantTaints}) {
				t.Errorf("taints = %v; want %v", node.Spec.Taints, tc.wantTaints)
			}
			if node.Annotations[v1alpha1.NodeMachineAnnotation] != "m1" || node.Annotations[v1alpha1.NodeClusterNamespaceAnnotation] != "ns" {
				t.Errorf("back-reference annotations missing: %v", node.Annotations)
			}
			var recorded nodeState
			if err := json.Unmarshal([]byte(node.Annotations[v1alpha1.NodeLastAppliedTemplateAnnotation]), &recorded); err != nil {
				t.Fatalf("last-applied record: %v", err)
			}
			if lastApplied(t, recorded) != lastApplied(t, tc.desired) {
				t.Errorf("last-applied record = %+v; want %+v", recorded, tc.desired)
			}
			if applyNodeTemplate(node, tc.desired, refs) {
				t.Error("a second apply of the same template changed the Node again")
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestStaleNode(t *testing.T) {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "ns"}, Spec: v1alpha1.MachineSpec{ProviderID: "sim://r/z/vm-1"}}
	cases := []struct {
		name       string
		providerID string
		owner, ns  string
		stale      bool
	}{
		{"same VM", "sim://r/z/vm-1", "", "", false},
		{"no providerID yet", "", "", "", false},
		{"another VM under the same name", "sim://r/z/vm-0", "", "", true},
		{"annotated for another Machine", "", "m0", "ns", true},
		{"annotated for a namesake in another namespace", "", "m1", "other", true},
		{"annotated for this Machine", "sim://r/z/vm-1", "m1", "ns", false},
	}
	for _, tc := range cases {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m1", Annotations: map[string]string{}}}
		node.Spec.ProviderID = tc.providerID
		if tc.owner != "" {
			node.Annotations[v1alpha1.NodeMachineAnnotation] = tc.owner
			node.Annotations[v1alpha1.NodeClusterNamespaceAnnotation] = tc.ns
		}
		if _, stale := staleNode(node, m); stale != tc.stale {
			t.Errorf("%s: stale = %v; want %v", tc.name, stale, tc.stale)
		}
	}
}

func TestEvaluateNode(t *testing.T) {
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s}
	}
	node := func(conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Conditions: conds}}
	}
	watched := []string{"KernelDeadlock", "DiskPressure"}
	cases := []struct {
		name string
		node *corev1.Node
		ok   bool
	}{
		{"no node", nil, false},
		{"no Ready condition yet", node(), false},
		{"ready", node(cond(corev1.NodeReady, corev1.ConditionTrue)), true},
		{"not ready", node(cond(corev1.NodeReady, corev1.ConditionFalse)), false},
		{"ready status unknown", node(cond(corev1.NodeReady, corev1.ConditionUnknown)), false},
		{"ready with disk pressure", node(cond(corev1.NodeReady, corev1.ConditionTrue), cond("DiskPressure", corev1.ConditionTrue)), false},
		{"ready, watched condition false", node(cond(corev1.NodeReady, corev1.ConditionTrue), cond("KernelDeadlock", corev1.ConditionFalse)), true},
		{"ready, unwatched condition true", node(cond(corev1.NodeReady, corev1.ConditionTrue), cond("MemoryPressure", corev1.ConditionTrue)), true},
	}
	for _, tc := range cases {
		h := evaluateNode(tc.node, watched)
		if h.ok() != tc.ok {
			t.Errorf("%s: ok = %v; want %v (%s)", tc.name, h.ok(), tc.ok, h.why)
		}
		if !h.ok() && h.why == "" {
			t.Errorf("%s: unhealthy without saying why", tc.name)
		}
	}
}
