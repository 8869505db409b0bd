package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestHealthReplacement proves the health check and its meltdown
// protection: three VMs are killed behind Millwright's back (the sim stops
// them; kwok then reports their Nodes NotReady), their Machines go Unknown,
// then Failed after the health timeout, and are replaced — never more than
// --max-concurrent-replacements (1) Failed at once, checked at every
// observed Machine state. The fleet ends at full strength with none of the
// killed Machines left, each of their Nodes deleted after its drain.
func TestHealthReplacement(t *testing.T) {
	const limit = 1
	s := newScenario(t, "health")
	s.startManager("--machine-health-timeout", "10s", "--max-concurrent-replacements", fmt.Sprint(limit),
		"--unreachable-force-drain-after", "5s")
	s.createClass("small", simSpec)
	s.createDeployment(6, "small", 1, 0)
	before := s.waitFleet(6, "small", 3*time.Minute)

	rec := s.record(func(r *recorder) string {
		var failed []string
		for _, m := range r.machinesLocked() {
			if m.Status.FailureReason != "" || m.Status.Phase == v1alpha1.PhaseFailed {
				failed = append(failed, m.Name)
			}
		}
		if len(failed) > limit {
			return fmt.Sprintf("%d Machines Failed at once (limit %d): %v", len(failed), limit, failed)
		}
		return ""
	})
	vms, err := s.vms()
	if err != nil {
		t.Fatal(err)
	}
	killed := map[string]bool{}
	for _, vm := range vms[:3] {
		s.killVM(vm.ID)
		killed[vm.MachineName] = true
	}
	s.eventually(4*time.Minute, "the killed Machines to be replaced", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		for _, m := range ms {
			if killed[m.Name] {
				return false, fmt.Errorf("%s is still there (%s)", m.Name, m.Status.Phase)
			}
		}
		return s.fleetIs(ms, 6, "small")
	})

	rec.verify()
	s.checkNoDuplicateVMs()
	phases := rec.phasesOf()
	for name := range killed {
		seq := phases[name]
		u, f := slices.Index(seq, v1alpha1.PhaseUnknown), slices.Index(seq, v1alpha1.PhaseFailed)
		if u < 0 || f < u {
			t.Errorf("killed Machine %s went through %v, want Unknown then Failed", name, seq)
		}
	}
	for _, m := range before {
		if !killed[m.Name] && len(phases[m.Name]) > 0 && phases[m.Name][len(phases[m.Name])-1] != v1alpha1.PhaseRunning {
			t.Errorf("healthy Machine %s went through %v", m.Name, phases[m.Name])
		}
	}
}
