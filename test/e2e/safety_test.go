package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/localcluster"
)

// TestSafetyOrphanCollection proves that a VM no Machine asked for (POST
// /orphans) is deleted by the safety controller's orphan collection, while
// the fleet's own VMs are left alone.
func TestSafetyOrphanCollection(t *testing.T) {
	s := newScenario(t, "orphan")
	s.startManager("--machine-safety-orphan-vms-period", "3s")
	s.createClass("small", simSpec)
	s.createDeployment(2, "small", 1, 0)
	before := s.waitFleet(2, "small", 2*time.Minute)

	orphan := s.createOrphan("small")
	s.eventually(2*time.Minute, "the orphan VM "+orphan.ID+" to be deleted", func() (bool, error) {
		vms, err := s.vms()
		gone := err == nil && !slices.ContainsFunc(vms, func(vm simVM) bool { return vm.ID == orphan.ID })
		return gone, err
	})
	after := s.waitFleet(2, "small", time.Minute)
	sameMachines(t, before, after)
	s.checkNoDuplicateVMs()
}

// TestSafetyAPIServerOutage proves the API-server freeze: kube-apiserver is
// stopped for longer than the health timeout, then started again. The
// manager, which could not see any Node meanwhile, declares no Machine
// dead: afterwards the same Machines (names and UIDs) are Running, none
// was ever Failed, and the sim created no VM.
func TestSafetyAPIServerOutage(t *testing.T) {
	const healthTimeout = 10 * time.Second
	s := newScenario(t, "outage")
	m := s.startManager("--machine-health-timeout", healthTimeout.String())
	s.createClass("small", simSpec)
	s.createDeployment(3, "small", 1, 0)
	before := s.waitFleet(3, "small", 2*time.Minute)
	rec := s.record()

	if err := cluster.StopComponent(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	// The outage must outlast the health timeout (real time must pass for
	// the manager to be tempted); meanwhile the manager must keep running.
	s.consistently(3*healthTimeout, "the manager runs while the API server is down", func() error {
		if exited, err := cluster.ProcessExited(m.name); exited {
			return fmt.Errorf("the manager exited during the outage: %v", err)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cluster.StartComponent(ctx, localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	// Long enough for every Machine to be judged again, and for a Machine
	// wrongly judged unhealthy to time out: none may fail meanwhile.
	s.consistently(3*healthTimeout, "no Machine Failed or Terminating after the outage", func() error {
		if exited, err := cluster.ProcessExited(m.name); exited {
			return fmt.Errorf("the manager exited: %v", err)
		}
		ms, err := s.machines()
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Status.FailureReason != "" || !m.DeletionTimestamp.IsZero() {
				return fmt.Errorf("Machine %s is %s (%s)", m.Name, m.Status.Phase, m.Status.FailureMessage)
			}
		}
		return nil
	})
	after := s.waitFleet(3, "small", 2*time.Minute)
	sameMachines(t, before, after)
	rec.verify()
	for name, seq := range rec.phasesOf() {
		if slices.Contains(seq, v1alpha1.PhaseFailed) || slices.Contains(seq, v1alpha1.PhaseTerminating) {
			t.Errorf("Machine %s went through %v", name, seq)
		}
	}
	if hist := s.checkNoDuplicateVMs(); len(hist) != 3 {
		t.Errorf("the sim created %d VMs, want the 3 of the fleet only: %+v", len(hist), hist)
	}
}

// sameMachines fails the test unless both lists hold the same Machines,
// by name and UID.
func sameMachines(t *testing.T, before, after []v1alpha1.Machine) {
	t.Helper()
	ids := func(ms []v1alpha1.Machine) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name+"/"+string(m.UID))
		}
		slices.Sort(out)
		return out
	}
	if b, a := ids(before), ids(after); !slices.Equal(b, a) {
		t.Errorf("the Machines changed: before %v, after %v", b, a)
	}
}
