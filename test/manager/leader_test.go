package manager_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// The follower sees the Lease expire LeaseDuration after it last saw it
// renewed, and looks every RetryPeriod plus up to 120% jitter (client-go),
// so it may take over as late as LeaseDuration + 2 × 2.2 × RetryPeriod
// after the leader's last renewal: 6.2s with these values, inside the
// LeaseDuration + RenewDeadline (7s) the test allows.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
	leaseName     = "millwright-test"
)

// Two replicas against one API server: only the Lease holder reconciles;
// when it is killed (no chance to release the Lease) the other takes over
// within lease duration + renew deadline and provisions new Machines; a
// replica stopped by SIGTERM releases the Lease.
func TestLeaderElectionHandsOver(t *testing.T) {
	ns := namespace(t, "leader")
	sim, endpoint := startSim(t, t.TempDir())
	leArgs := []string{"--leader-elect",
		"--leader-elect-lease-duration", leaseDuration.String(),
		"--leader-elect-renew-deadline", renewDeadline.String(),
		"--leader-elect-retry-period", retryPeriod.String(),
		"--leader-elect-id", leaseName}
	a := startManager(t, "manager-a", ns, endpoint, leArgs...)
	b := startManager(t, "manager-b", ns, endpoint, leArgs...)

	var leader, follower *managerProc
	testenv.Eventually(t, 30*time.Second, "one replica to lead", func() (bool, error) {
		aLeads, errA := a.leading()
		bLeads, errB := b.leading()
		if errA != nil || errB != nil {
			return false, fmt.Errorf("a: %v, b: %v", errA, errB)
		}
		switch {
		case aLeads && bLeads:
			t.Fatal("both replicas lead")
		case aLeads:
			leader, follower = a, b
		case bLeads:
			leader, follower = b, a
		}
		return leader != nil, nil
	})
	first := holder(t, ns)
	if first == "" {
		t.Fatalf("%s leads but the Lease has no holder", leader.Name)
	}

	createClass(t, ns)
	createMachine(t, ns, ns+"-m1")
	waitRunning(t, ns, ns+"-m1", 60*time.Second)
	if n := leader.reconciles(t); n == 0 {
		t.Errorf("the leader %s reports no Machine reconciles", leader.Name)
	}
	if n := follower.reconciles(t); n != 0 {
		t.Errorf("the follower %s reconciled %v times", follower.Name, n)
	}

	// kill -9: the leader cannot release the Lease; it must expire.
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	took := testenv.Eventually(t, leaseDuration+renewDeadline, "the follower to take the Lease", func() (bool, error) {
		h := holder(t, ns)
		return h != "" && h != first, nil
	})
	t.Logf("%s took over %s after the leader was killed", follower.Name, took.Round(100*time.Millisecond))
	testenv.Eventually(t, 5*time.Second, follower.Name+" to say it leads", follower.leading)

	createMachine(t, ns, ns+"-m2")
	waitRunning(t, ns, ns+"-m2", 60*time.Second)
	if n := follower.reconciles(t); n == 0 {
		t.Errorf("the new leader %s reports no Machine reconciles", follower.Name)
	}

	follower.Signal(t, syscall.SIGTERM)
	if code := follower.WaitExit(t, exitBound); code != 0 {
		t.Errorf("%s exited with %d after SIGTERM; want 0", follower.Name, code)
	}
	if h := holder(t, ns); h != "" {
		t.Errorf("the Lease is still held by %q after its holder stopped gracefully", h)
	}
	sim.Signal(t, syscall.SIGTERM)
	if code := sim.WaitExit(t, exitBound); code != 0 {
		t.Errorf("millwright-sim exited with %d after SIGTERM; want 0", code)
	}
}

// holder returns the Lease's holder identity ("" when free or absent).
func holder(t *testing.T, ns string) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaseName}, lease)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}
