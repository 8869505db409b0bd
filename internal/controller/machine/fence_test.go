package machine_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// switchFence is a leader fence the test opens and closes; it counts how
// often it was asked.
type switchFence struct {
	holds atomic.Bool
	asked atomic.Int64
}

func (f *switchFence) Holds() bool {
	f.asked.Add(1)
	return f.holds.Load()
}

// A replica whose Lease was not renewed within its renew deadline (a
// manager paused past its Lease, resuming in the middle of reconciles)
// starts no create and no delete: the new leader counts the class
// limits afresh, and its view may be newer. Both go ahead once the fence
// holds again.
func TestFencedReplicaStartsNoCreateOrDelete(t *testing.T) {
	fence := &switchFence{}
	// The sim, its calls counted and let through at once.
	d := holdingDriver{creates: newHeldCalls(), deletes: newHeldCalls()}
	close(d.creates.released)
	close(d.deletes.released)
	h := controllertest.New(t, controllertest.Options{
		Machine: func(r *machine.Reconciler) {
			d.Driver = r.Drivers["sim"]
			r.Drivers["sim"] = d
			r.Fence = fence
		},
	})
	h.Class("fenced", simSpec)
	h.Machine("m", "fenced", nil)
	// Asked three times: the Machine was tried again after the fence held
	// it back (each retry a second later), and never created.
	held := func(what string, calls *heldCalls) {
		from := fence.asked.Load()
		h.Eventually(30*time.Second, "the fence to hold back the "+what+" three times", func() (bool, error) {
			if _, n := calls.counts(); n > 0 {
				return false, fmt.Errorf("a %s call reached the driver while the fence did not hold", what)
			}
			return fence.asked.Load() >= from+3, nil
		})
	}
	held("create", d.creates)
	if p := h.Get("m").Spec.ProviderID; p != "" {
		t.Fatalf("the Machine records VM %s though no create was made", p)
	}
	fence.holds.Store(true)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 60*time.Second)

	fence.holds.Store(false)
	h.DeleteMachine("m")
	held("delete", d.deletes)
	if m := h.Get("m"); m.DeletionTimestamp == nil || len(m.Finalizers) == 0 {
		t.Fatalf("the Machine is not waiting for its VM's delete: deletionTimestamp %v, finalizers %v", m.DeletionTimestamp, m.Finalizers)
	}
	fence.holds.Store(true)
	h.WaitGone("m")
	if _, n := d.deletes.counts(); n == 0 {
		t.Fatal("the Machine is gone without a DeleteMachine call")
	}
}
