package e2e

import (
	"testing"
	"time"
)

// TestCrashSafety proves that the manager's work survives being killed
// (SIGKILL) at random moments: during a scale-up, a rolling update to
// another MachineClass and a scale-down draining a workload, the manager
// is killed and restarted at least 20 times (seeded; E2E_SEED replays a
// run). Every phase still converges, and at the end: no Machine ever had
// two VMs, no Machine disappeared without its deletion steps, no Node was
// deleted before its Machine's drain finished, the workload's disruption
// budget held at every observed state, and the sim holds exactly the
// fleet's VMs.
func TestCrashSafety(t *testing.T) {
	const minKills = 20
	rng := seededRand(t)
	s := newScenario(t, "crash")
	m := s.startManager()
	s.createClass("small", simSpec)
	s.createClass("large", largeSpec)
	s.createDeployment(2, "small", 1, 0)
	s.waitFleet(2, "small", 2*time.Minute)
	rec := s.record()
	s.createWorkload(8, 6)
	rec.addCheck(budgetKept(6))

	c := s.startChaos(m, rng, 500*time.Millisecond, 4*time.Second)
	s.scale(8)
	s.waitFleet(8, "small", 5*time.Minute)
	s.rollTo("large")
	s.waitFleet(8, "large", 6*time.Minute)
	s.scale(3)
	s.waitFleet(3, "large", 5*time.Minute)
	s.eventually(3*time.Minute, "enough kills", func() (bool, error) { return c.kills.Load() >= minKills, nil })
	kills := c.stop()
	t.Logf("the manager was killed %d times", kills)

	s.waitFleet(3, "large", 2*time.Minute)
	s.waitWorkload(8, 2*time.Minute)
	rec.verify()
	s.checkNoDuplicateVMs()
}

// largeSpec is a second sim class: a rollout to it replaces every Machine.
const largeSpec = `{"region":"local","zones":["local-a","local-b"],"instanceType":"sim.medium","bootDelay":"1s","bootJitter":"1s"}`
