// Package leaderfence tells a leader-elected manager whether it still
// holds its Lease, so that it starts no VM create or delete after
// another replica may have taken over (docs/reliability.md, "The
// leader fence").
//
// Leader election alone does not: a replica paused past its Lease
// (SIGSTOP, a long GC or a frozen VM) resumes with its workers in the
// middle of reconciles, and they run on until its renewal fails, while
// the new leader already works with its own in-memory counts (a class's
// creates in flight among them).
package leaderfence

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Fence is what a controller asks before it starts a VM create or
// delete: whether this replica still holds its Lease.
type Fence interface {
	Holds() bool
}

// Lost reports whether f says this replica no longer holds its Lease,
// before the driver call named call (create, delete, orphan-delete),
// and counts the calls it held back. A nil Fence never loses: without
// leader election the only replica acts.
func Lost(f Fence, call string) bool {
	if f == nil || f.Holds() {
		return false
	}
	refusals.WithLabelValues(call).Inc()
	return true
}

// Lock is a resourcelock.Interface that remembers when this replica last
// wrote the Lease as its holder. Leader election renews through Update
// (and takes the Lease through Create or Update); a write that succeeds
// proves the Lease was this replica's when the request was sent, and no
// other replica can take it until a whole lease duration after it saw
// that write.
type Lock struct {
	resourcelock.Interface
	// window is how old the last renewal may be for Holds to answer true.
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	renewed time.Time // when the last successful write as holder was sent
}

// Wrap returns inner recording its renewals; Holds answers true while the
// last one was sent less than window ago. window must be below the lease
// duration (the renew deadline is the natural choice: a replica that has
// not renewed within it stops leading anyway).
func Wrap(inner resourcelock.Interface, window time.Duration) *Lock {
	return &Lock{Interface: inner, window: window, now: time.Now}
}

// Create takes a Lease nobody held.
func (l *Lock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := l.now()
	err := l.Interface.Create(ctx, rec)
	l.observe(sent, rec, err)
	return err
}

// Update renews the Lease, takes an expired one, or releases it.
func (l *Lock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := l.now()
	err := l.Interface.Update(ctx, rec)
	l.observe(sent, rec, err)
	return err
}

// observe records a successful write naming this replica the holder. A
// release (an empty holder) ends the fence at once.
func (l *Lock) observe(sent time.Time, rec resourcelock.LeaderElectionRecord, err error) {
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec.HolderIdentity == l.Identity() {
		l.renewed = sent
	} else {
		l.renewed = time.Time{}
	}
}

// Holds reports whether this replica renewed its Lease within the window.
// time.Time keeps a monotonic reading, so a process stopped and resumed
// sees the time that passed meanwhile. A nil Lock (no leader election)
// holds.
func (l *Lock) Holds() bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.renewed.IsZero() && l.now().Sub(l.renewed) < l.window
}
