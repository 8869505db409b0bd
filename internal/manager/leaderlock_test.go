package manager

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// The fence follows the real Lease on a real API server: it holds while
// this replica leads, and no longer once another holder took the Lease,
// by the time leader election itself gives up.
func TestLeaderFenceFollowsTheLease(t *testing.T) {
	e, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	o := NewOptions()
	o.Namespace = "default"
	o.LeaderElection.Enabled = true
	o.LeaderElection.ID = "fence-test"
	o.LeaderElection.LeaseDuration, o.LeaderElection.RenewDeadline, o.LeaderElection.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fence, err := o.leaderLock(ctx, e.Config)
	if err != nil {
		t.Fatal(err)
	}
	if fence.Holds() {
		t.Fatal("the fence holds before any election")
	}
	started, stopped := make(chan struct{}), make(chan struct{})
	le := o.LeaderElection
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: fence, LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() { close(stopped) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go elector.Run(ctx)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("not elected within 30s")
	}
	// Past a lease duration, renewed several times: still held.
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: "default", Name: "fence-test"}
	var first time.Time
	testenv.Eventually(t, 30*time.Second, "renewals for longer than a lease duration", func() (bool, error) {
		if err := e.Client.Get(ctx, key, lease); err != nil {
			return false, err
		}
		if first.IsZero() {
			first = lease.Spec.RenewTime.Time
		}
		return lease.Spec.RenewTime.Sub(first) > le.LeaseDuration, nil
	})
	if !fence.Holds() {
		t.Fatal("the fence does not hold while this replica leads")
	}

	// Another replica takes the Lease (as after this one was paused past
	// it): renewals fail from now on.
	lease.Spec.HolderIdentity = ptr.To("another-replica")
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Hour)}
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(3600))
	if err := e.Client.Update(ctx, lease); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("leader election did not stop leading within 30s of losing the Lease")
	}
	if fence.Holds() {
		t.Fatal("the fence still holds after leader election stopped leading")
	}
}
