package machine

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The Machine's zone (spec.failureDomain) is its Node's
// topology.kubernetes.io/zone, over a wrong one the Node came with, beside
// the nodeTemplate's labels; the template itself is not changed.
func TestNodeGetsTheMachinesZone(t *testing.T) {
	m := &v1alpha1.Machine{}
	m.Spec.FailureDomain = "zone-b"
	m.Spec.NodeTemplate.Metadata.Labels = map[string]string{"role": "web"}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
	if !applyNodeTemplate(node, desiredNodeState(m), nil) {
		t.Fatal("applyNodeTemplate reported no change")
	}
	if node.Labels[corev1.LabelTopologyZone] != "zone-b" || node.Labels["role"] != "web" {
		t.Errorf("node labels = %v: want %s=zone-b and role=web", node.Labels, corev1.LabelTopologyZone)
	}
	if _, ok := m.Spec.NodeTemplate.Metadata.Labels[corev1.LabelTopologyZone]; ok {
		t.Error("the Machine's nodeTemplate was changed")
	}

	// Without a zone the Node keeps whatever zone it reports.
	m.Spec.FailureDomain = ""
	node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
	applyNodeTemplate(node, desiredNodeState(m), nil)
	if node.Labels[corev1.LabelTopologyZone] != "zone-a" {
		t.Errorf("node labels = %v: the Node's own zone was changed", node.Labels)
	}
}

// Replacing the zone the Node reported is said with a Warning Event, once:
// a Node whose zone already is the Machine's, or that reported none, gets
// none.
func TestZoneOverrideIsWarned(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	m := &v1alpha1.Machine{}
	m.Spec.FailureDomain = "zone-b"
	s := &scope{r: &Reconciler{Recorder: rec}, machine: m}
	for _, reported := range []string{"zone-a", "zone-b", ""} {
		before := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-" + reported, Labels: map[string]string{}}}
		if reported != "" {
			before.Labels[corev1.LabelTopologyZone] = reported
		}
		after := before.DeepCopy()
		applyNodeTemplate(after, desiredNodeState(m), nil)
		warnZoneOverride(s, before, after)
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d Events, want 1 (for the Node that reported zone-a)", len(rec.Events))
	}
	if e := <-rec.Events; !strings.Contains(e, "Warning ZoneOverridden") || !strings.Contains(e, `reported zone "zone-a"`) {
		t.Errorf("Event %q, want a ZoneOverridden Warning naming the reported zone", e)
	}
}
