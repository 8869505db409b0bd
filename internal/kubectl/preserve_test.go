package kubectl_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestPreserveWithControllers: preserve sets the annotation and the machine
// controller keeps the Machine (Preserved True, Node cordoned);
// --when-failed changes the request; unpreserve ends it.
func TestPreserveWithControllers(t *testing.T) {
	h := fleetHarness(t)
	h.Class("small", controllertest.SimSpec)
	// A Machine of no set: a set would replace it while preserved and
	// scale one of the two away when preservation ends.
	h.Machine("kept", "small", nil)
	h.WaitPhase("kept", v1alpha1.PhaseRunning, time.Minute)
	m := h.Prefix + "kept"
	c := newCLI(t, h.NS)

	if out := c.ok("preserve", m); out != "machine.machine.millwright.dev/"+m+" preserved (now)\n" {
		t.Errorf("preserve: %q", out)
	}
	if out := c.ok("preserve", m); out != "machine.machine.millwright.dev/"+m+" unchanged\n" {
		t.Errorf("preserve twice: %q", out)
	}
	h.Eventually(30*time.Second, "the Machine preserved and its Node cordoned", func() (bool, error) {
		got := h.Get("kept")
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.PreservedCondition) || got.Status.NodeRef == nil {
			return false, nil
		}
		node, err := h.Node(got.Status.NodeRef.Name)
		return err == nil && node.Spec.Unschedulable, err
	})

	c.ok("preserve", m, "--when-failed")
	if got := h.Get("kept").Annotations[v1alpha1.PreserveAnnotation]; got != v1alpha1.PreserveWhenFailed {
		t.Errorf("preserve --when-failed: annotation %q", got)
	}
	if out := c.ok("unpreserve", m); out != "machine.machine.millwright.dev/"+m+" unpreserved\n" {
		t.Errorf("unpreserve: %q", out)
	}
	h.Eventually(30*time.Second, "the preservation to end", func() (bool, error) {
		got := h.Get("kept")
		_, asked := got.Annotations[v1alpha1.PreserveAnnotation]
		return !asked && !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.PreservedCondition), nil
	})
	c.fails("not found", "preserve", "no-such-machine")
}
