package kubectl_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestDescribeLifecycle follows a Machine the controllers create, run and
// drain: describe shows the steps the machine controller recorded, and
// what blocks the drain (a pod behind a budget that allows no
// disruption), as does drain status.
func TestDescribeLifecycle(t *testing.T) {
	h := fleetHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Machine("life", "small", nil)
	m := h.WaitPhase("life", v1alpha1.PhaseRunning, time.Minute)
	c := newCLI(t, h.NS)

	out := c.ok("describe", "machine", m.Name)
	for _, want := range []string{"Phase:        Running", "Provider ID:  " + m.Spec.ProviderID,
		// No " VM created ": the routine create has no Event of its own
		// (docs/machine-phases.md); the condition says it.
		" created ", " VM provisioned ", "providerID " + m.Spec.ProviderID, " Node joined ", " Node Ready ",
		" Running ", "Waiting for:  nothing: Running"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe of a Running Machine: no %q in\n%s", want, out)
		}
	}
	if !strings.Contains(c.ok("drain", "status", m.Name), "Drain:    not started") {
		t.Error("drain status of a Running Machine does not say the drain has not started")
	}

	node := m.Status.NodeRef.Name
	pod(t, h.NS, "guarded", node, corev1.PodRunning, map[string]string{"app": "guarded"}, "")
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: h.NS},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrTo(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}
	create(t, pdb)
	// No disruption controller runs here: play its part, so the budget
	// is processed and allows no disruption (an unprocessed one makes the
	// API server ask the drain to retry later, inside client-go).
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	setStatus(t, pdb)
	h.DeleteMachine("life")
	h.Eventually(time.Minute, "an eviction refused", func() (bool, error) {
		d := h.Get("life").Status.Deletion
		return d != nil && d.Step == v1alpha1.StepDrain && d.Drain != nil && d.Drain.LastRefusedTime != nil, nil
	})
	out = c.ok("describe", "machine", m.Name)
	for _, want := range []string{"Phase:        Terminating", " deletion requested ", " deletion step Drain started ", " drain blocked ",
		"Waiting for:  the drain: 1 pod(s) still on the Node: " + h.NS + "/guarded (blocked by PodDisruptionBudget " + h.NS + "/guard)"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe of a Machine whose drain is blocked: no %q in\n%s", want, out)
		}
	}
	out = c.ok("drain", "status", m.Name)
	if !strings.Contains(out, h.NS+"/guarded") || !strings.Contains(out, "PodDisruptionBudget "+h.NS+"/guard (0 disruptions allowed)") {
		t.Errorf("drain status of a blocked drain:\n%s", out)
	}
}
