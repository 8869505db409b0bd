package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestScale proves that a MachineDeployment scales 0 → 20 → 5 → 0 on a real
// control plane: every Machine reaches Running with a Ready Node; every
// Machine scaled away is drained before its Node is deleted and is deleted
// through its deletion steps; no Machine ever gets two VMs; and at zero the
// sim holds no VM of the scenario and no Node of it is left.
func TestScale(t *testing.T) {
	s := newScenario(t, "scale")
	s.startManager()
	rec := s.record()
	s.createClass("small", simSpec)
	s.createDeployment(0, "small", 1, 0)

	s.scale(20)
	s.waitFleet(20, "small", 4*time.Minute)
	s.scale(5)
	s.waitFleet(5, "small", 3*time.Minute)
	s.scale(0)
	s.waitFleet(0, "small", 3*time.Minute)
	s.eventually(time.Minute, "no Node of the scenario left", func() (bool, error) {
		nodes, err := s.scenarioNodes()
		return len(nodes) == 0, err
	})

	rec.verify()
	hist := s.checkNoDuplicateVMs()
	if len(hist) != 20 {
		t.Errorf("the sim created %d VMs, want 20 (one per Machine)", len(hist))
	}
	phases := rec.phasesOf()
	if len(phases) != 20 {
		t.Errorf("saw %d Machines, want 20", len(phases))
	}
	for name, seq := range phases {
		if !slices.Contains(seq, v1alpha1.PhaseRunning) {
			t.Errorf("Machine %s never was Running: phases %v", name, seq)
		}
	}
}
