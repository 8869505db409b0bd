package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// TestLeaderFailover proves that with two managers electing a leader, the
// leader's death (SIGKILL) in the middle of a rolling update is survived:
// the other manager takes the Lease and finishes the rollout, with every
// old Node drained before its deletion and no Machine getting two VMs.
func TestLeaderFailover(t *testing.T) {
	s := newScenario(t, "leader")
	le := []string{"--leader-elect", "--leader-elect-lease-duration", "4s",
		"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "1s"}
	a, b := s.startManager(le...), s.startManager(le...)
	s.createClass("small", simSpec)
	s.createClass("large", largeSpec)
	s.createDeployment(4, "small", 1, 0)
	s.waitFleet(4, "small", 2*time.Minute)
	rec := s.record()

	s.rollTo("large")
	s.eventually(2*time.Minute, "the rollout to be half way", func() (bool, error) {
		ms, err := s.machines()
		large := 0
		for _, m := range ms {
			if m.Spec.Class.Name == "large" && m.DeletionTimestamp == nil {
				large++
			}
		}
		return large >= 2 && large < 4, err
	})
	leader, follower := a, b
	if leads(b) {
		leader, follower = b, a
	} else if !leads(a) {
		t.Fatal("neither manager leads")
	}
	s.killManager(leader)
	s.eventually(30*time.Second, follower.name+" to lead", func() (bool, error) { return leads(follower), nil })
	s.waitFleet(4, "large", 4*time.Minute)
	rec.verify()
	s.checkNoDuplicateVMs()
}

// leads reports whether m says, in its metrics, that it holds the Lease.
func leads(m *manager) bool {
	code, body, err := testenv.HTTPGet("http://" + m.metrics + "/metrics")
	if err != nil || code != 200 {
		return false
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "leader_election_master_status") && strings.HasSuffix(line, " 1") {
			return true
		}
	}
	return false
}
