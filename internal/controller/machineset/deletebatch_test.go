package machineset_test

import (
	"context"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
)

// deletesInFlight is the set controller's client: it counts the Machine
// DELETEs in flight at once, and before sending each runs hold, if set,
// with the count (this one included).
type deletesInFlight struct {
	client.Client
	hold     func(ctx context.Context, inFlight int) error
	mu       sync.Mutex
	inFlight int
	most     int
}

func (c *deletesInFlight) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*v1alpha1.Machine); !ok {
		return c.Client.Delete(ctx, obj, opts...)
	}
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	n := c.inFlight
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.inFlight--; c.mu.Unlock() }()
	if c.hold != nil {
		if err := c.hold(ctx, n); err != nil {
			return err
		}
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// mostInFlight is the most Machine DELETEs that were in flight at once.
func (c *deletesInFlight) mostInFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most
}

// pairFirst holds the first Machine DELETE until a second is sent: one at
// a time, the scale-down never ends.
func pairFirst() func(ctx context.Context, inFlight int) error {
	var once sync.Once
	second := make(chan struct{})
	var first sync.Once
	return func(ctx context.Context, inFlight int) error {
		if inFlight >= 2 {
			once.Do(func() { close(second) })
		}
		waits := false
		first.Do(func() { waits = true })
		if !waits {
			return nil
		}
		select {
		case <-second:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// The victims of one scale-down are deleted at once, not one DELETE round
// trip after the other (which held the old set of a rolling update for
// the whole batch: docs/benchmarks.md).
func TestVictimsAreDeletedAtOnce(t *testing.T) {
	c := &deletesInFlight{hold: pairFirst()}
	h := scaledToZero(t, c, 3, 0)
	h.Eventually(60*time.Second, "the set's Machines all deleting", func() (bool, error) {
		for _, m := range machinesOf(h, "pool") {
			if m.DeletionTimestamp.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	if most := c.mostInFlight(); most < 2 {
		t.Fatalf("at most %d Machine DELETE in flight, want the victims deleted at once", most)
	}
}

// A scale-down deletes at most MaxDeleteBatch Machines at once, and the
// next reconciles delete the others: sent all at once, the DELETEs of a
// 5000-Machine scale-down timed out in the API server (docs/benchmarks.md).
func TestScaleDownDeletesInBatches(t *testing.T) {
	// Each DELETE held a moment, so that those sent together overlap.
	c := &deletesInFlight{hold: func(context.Context, int) error { time.Sleep(100 * time.Millisecond); return nil }}
	h := scaledToZero(t, c, 5, 2)
	h.Eventually(60*time.Second, "the set's Machines all gone", func() (bool, error) {
		return len(machinesOf(h, "pool")) == 0, nil
	})
	if most := c.mostInFlight(); most != 2 {
		t.Fatalf("%d Machine DELETEs in flight at once, want MaxDeleteBatch's 2", most)
	}
}

// scaledToZero runs the set controller with c as its client and
// maxDeleteBatch, makes the set "pool" of n Ready Machines, and scales it
// to 0.
func scaledToZero(t *testing.T, c *deletesInFlight, n int32, maxDeleteBatch int) *controllertest.Harness {
	t.Helper()
	h := controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			c.Client = mgr.GetClient()
			r := &machineset.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("machineset-controller"), MaxDeleteBatch: maxDeleteBatch}
			return r.SetupWithManager(ctx, mgr, 2)
		},
	})
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", n, "small", nil)
	waitReady(h, "pool", n, 60*time.Second)
	scaleTo(h, "pool", 0)
	return h
}
