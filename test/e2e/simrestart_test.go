package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// TestDriverRestart proves scenario 6(a), a driver out of process: the
// sim (the "sim" driver, a gRPC server on a unix socket) is stopped twice
// in the middle of a rolling update of 4 Machines — once with SIGTERM and
// once with SIGKILL — and started again with the same --snapshot, so its
// cloud survives. The manager's gRPC client reconnects by itself (the
// manager is never restarted and is ready again afterwards); the rollout
// completes within maxSurge/maxUnavailable at every observed state; every
// old Node is drained before its deletion; no Machine disappeared without
// its deletion steps; no Machine ever had two VMs (the sim's /history);
// and the sim ends holding exactly the new fleet's VMs.
//
// A SIGKILLed sim keeps every create and delete it answered: it saves
// its snapshot before a CreateMachine or DeleteMachine returns. What it
// loses is what it changed since its last periodic save (at most a second)
// without telling a caller it was done: a create cut short by the kill is
// made again by the manager's retry, as one VM.
func TestDriverRestart(t *testing.T) {
	const replicas, surge, unavailable = 4, 1, 0
	s := newScenario(t, "simrestart")
	m := s.startManager("--machine-safety-orphan-vms-period", "5s", "--machine-creation-timeout", "45s")
	s.createClass("small", simSpec)
	s.createClass("large", largeSpec)
	s.createDeployment(replicas, "small", surge, unavailable)
	s.waitFleet(replicas, "small", 2*time.Minute)
	rec := s.record(withinRollingBounds(replicas, surge, unavailable))

	s.rollTo("large")
	// Each stop comes while a new Machine is on its way: its VM may be
	// in creation when the driver goes away.
	for i, stop := range []func(){s.stopSim, s.killSim} {
		s.waitNewMachines("large", i+1)
		stop()
		s.waitDriverDown(m)
		s.restartSim()
	}
	s.waitFleet(replicas, "large", 4*time.Minute)
	s.waitReady(m)
	rec.verify()
	hist := s.checkNoDuplicateVMs()
	// One VM per Machine, 4 old and 4 new: the kill made the sim forget no
	// VM, so no Machine waited out its creation timeout to be replaced.
	if len(hist) != 2*replicas {
		t.Errorf("the sim's history holds %d VMs, want %d; %d Machines seen: %v", len(hist), 2*replicas, len(rec.machineNames()), rec.machineNames())
	}
}

// waitNewMachines waits until at least n Machines of class exist, the
// last of them not yet Running.
func (s *scenario) waitNewMachines(class string, n int) {
	s.t.Helper()
	s.eventually(2*time.Minute, fmt.Sprintf("%d Machines of class %s, one in creation", n, class), func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		count, creating := 0, false
		for i := range ms {
			if ms[i].Spec.Class != nil && ms[i].Spec.Class.Name == class {
				count++
				creating = creating || !machineAvailable(&ms[i])
			}
		}
		return count >= n && creating, fmt.Errorf("%d Machines of class %s", count, class)
	})
}

// waitDriverDown waits until m's /readyz says a driver does not answer:
// the manager has seen the sim gone, and its calls fail meanwhile.
func (s *scenario) waitDriverDown(m *manager) {
	s.t.Helper()
	s.eventually(time.Minute, m.name+" to see the driver gone", func() (bool, error) {
		code, body, err := testenv.HTTPGet("http://" + m.health + "/readyz?verbose")
		if err != nil {
			return false, err
		}
		return code != 200, fmt.Errorf("/readyz %d: %s", code, body)
	})
}
