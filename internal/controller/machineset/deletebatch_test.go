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

// pairedDeletes is the set controller's client: its first Machine DELETE
// waits until a second one is sent, so one at a time the scale-down never
// ends.
type pairedDeletes struct {
	client.Client
	mu       sync.Mutex
	inFlight int
	most     int
	second   chan struct{}
}

func (c *pairedDeletes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*v1alpha1.Machine); !ok {
		return c.Client.Delete(ctx, obj, opts...)
	}
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	first := c.second == nil
	if first {
		c.second = make(chan struct{})
	} else if c.inFlight == 2 {
		close(c.second)
	}
	wait := c.second
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.inFlight--; c.mu.Unlock() }()
	if first {
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// The victims of one scale-down are deleted at once, not one DELETE round
// trip after the other (which held the old set of a rolling update for
// the whole batch: docs/benchmarks.md).
func TestVictimsAreDeletedAtOnce(t *testing.T) {
	c := &pairedDeletes{}
	h := controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			c.Client = mgr.GetClient()
			r := &machineset.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("machineset-controller")}
			return r.SetupWithManager(ctx, mgr, 2)
		},
	})
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 3, "small", nil)
	waitReady(h, "pool", 3, 60*time.Second)
	scaleTo(h, "pool", 0)
	h.Eventually(60*time.Second, "the set's Machines all deleting", func() (bool, error) {
		for _, m := range machinesOf(h, "pool") {
			if m.DeletionTimestamp.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.most < 2 {
		t.Fatalf("at most %d Machine DELETE in flight, want the victims deleted at once", c.most)
	}
}

// countedDeletes is the set controller's client: it counts the Machine
// DELETEs in flight, each held a moment so that those sent together
// overlap.
type countedDeletes struct {
	client.Client
	mu       sync.Mutex
	inFlight int
	most     int
}

func (c *countedDeletes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*v1alpha1.Machine); !ok {
		return c.Client.Delete(ctx, obj, opts...)
	}
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.inFlight--; c.mu.Unlock() }()
	time.Sleep(100 * time.Millisecond)
	return c.Client.Delete(ctx, obj, opts...)
}

// A scale-down deletes at most MaxDeleteBatch Machines at once, and the
// next reconciles delete the others: sent all at once, the DELETEs of a
// 5000-Machine scale-down timed out in the API server (docs/benchmarks.md).
func TestScaleDownDeletesInBatches(t *testing.T) {
	c := &countedDeletes{}
	h := controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			c.Client = mgr.GetClient()
			r := &machineset.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("machineset-controller"), MaxDeleteBatch: 2}
			return r.SetupWithManager(ctx, mgr, 2)
		},
	})
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 5, "small", nil)
	waitReady(h, "pool", 5, 60*time.Second)
	scaleTo(h, "pool", 0)
	h.Eventually(60*time.Second, "the set's Machines all gone", func() (bool, error) {
		return len(machinesOf(h, "pool")) == 0, nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.most > 2 {
		t.Fatalf("%d Machine DELETEs in flight at once, want at most MaxDeleteBatch 2", c.most)
	}
	if c.most < 2 {
		t.Fatalf("at most %d Machine DELETE in flight, want the batch's 2 at once", c.most)
	}
}
