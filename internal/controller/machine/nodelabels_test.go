package machine_test

import (
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestDriverNodeLabelsReachTheMachineAndItsNode: the capacity type the sim
// reports (its class's capacityType) ends on the Machine's labels and on
// its Node's, beside the template's labels, over the real API server.
// Machine "created" learns it from CreateMachine; "found" from
// GetMachineStatus, its create having made the VM and then failed (a lost
// response), so only the next reconcile's status call reports the VM.
// The template's own value for the key loses to the driver's: it is a
// fact about the VM.
func TestDriverNodeLabelsReachTheMachineAndItsNode(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("spot", `{"region":"local","zones":["local-a"],"capacityType":"spot"}`)
	h.Class("spot-lost-response", `{"region":"local","zones":["local-a"],"capacityType":"spot",
		"faults":{"create":{"code":"Unavailable","count":1,"afterEffect":true}}}`)
	template := func(m *v1alpha1.Machine) {
		m.Labels = map[string]string{"team": "web"}
		m.Spec.NodeTemplate.Metadata.Labels = map[string]string{"role": "web", driver.CapacityTypeLabel: "on-demand"}
	}
	h.Machine("created", "spot", template)
	h.Machine("found", "spot-lost-response", template)
	for _, name := range []string{"created", "found"} {
		m := h.WaitPhase(name, v1alpha1.PhaseRunning, 30*time.Second)
		if got := m.Labels[driver.CapacityTypeLabel]; got != "spot" || m.Labels["team"] != "web" {
			t.Errorf("%s: Machine labels = %v; want %s=spot beside team=web", name, m.Labels, driver.CapacityTypeLabel)
		}
		h.Eventually(30*time.Second, name+"'s Node labelled spot", func() (bool, error) {
			node, err := h.Node(m.Status.NodeRef.Name)
			if err != nil {
				return false, err
			}
			return node.Labels[driver.CapacityTypeLabel] == "spot" && node.Labels["role"] == "web", nil
		})
	}
	if n := len(h.Sim.Cloud().History()); n != 2 {
		t.Errorf("%d VMs were ever created; want 2", n)
	}
}
