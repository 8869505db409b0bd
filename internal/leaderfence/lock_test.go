package leaderfence

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resourcelock.Interface whose writes fail when told to:
// the fence's logic only, no API server (the e2e chaos run has the real
// one).
type fakeLock struct {
	resourcelock.Interface
	fail error
}

func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return f.fail }
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return f.fail }
func (f *fakeLock) Identity() string                                                { return "me" }

func TestHoldsOnlyWithinTheWindowOfTheLastRenewal(t *testing.T) {
	ctx := context.Background()
	inner := &fakeLock{}
	l := Wrap(inner, 3*time.Second)
	clock := time.Unix(1000, 0)
	l.now = func() time.Time { return clock }
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}

	if l.Holds() {
		t.Fatal("holds before the Lease was ever taken")
	}
	if err := l.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if !l.Holds() {
		t.Fatal("does not hold right after taking the Lease")
	}
	clock = clock.Add(2 * time.Second)
	if err := l.Update(ctx, mine); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2900 * time.Millisecond)
	if !l.Holds() {
		t.Fatal("does not hold 2.9s after a renewal, with a 3s window")
	}
	// A replica paused past its Lease: the renewals it tries on waking
	// fail, and it must not act meanwhile.
	inner.fail = errors.New("conflict")
	clock = clock.Add(200 * time.Millisecond)
	if err := l.Update(ctx, mine); err == nil {
		t.Fatal("the inner error was lost")
	}
	if l.Holds() {
		t.Fatal("holds 3.1s after the last successful renewal")
	}
	// Released on shutdown: an empty holder.
	inner.fail = nil
	if err := l.Update(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatal(err)
	}
	if l.Holds() {
		t.Fatal("holds after releasing the Lease")
	}
}

func TestNoFenceNeverLoses(t *testing.T) {
	if Lost(nil, "create") {
		t.Fatal("without leader election the only replica must act")
	}
	var l *Lock
	if Lost(l, "create") {
		t.Fatal("a nil Lock (no leader election) must not lose")
	}
}
