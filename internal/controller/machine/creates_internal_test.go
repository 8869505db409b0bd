package machine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func machineWithUID(i int) *v1alpha1.Machine {
	return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("m", i), UID: types.UID(fmt.Sprint(i))}}
}

// waitAllDone waits until every create known to c has ended.
func waitAllDone(t *testing.T, c *creates) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cc := range c.calls {
			if !cc.done {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal("creates still running:", err)
	}
}

// A create whose context ends just as it could take a slot gives the slot
// back: once the manager stops, every slot is free again.
func TestCreatesReleaseTheirSlotWhenCancelled(t *testing.T) {
	c := newCreates(2)
	c.stop() // the manager stopped while creates waited: slot and Done both ready
	var called atomic.Int32
	for i := range 64 {
		c.start(context.Background(), machineWithUID(i), nil, func(context.Context) (*driver.CreateMachineResponse, error) {
			called.Add(1)
			return &driver.CreateMachineResponse{}, nil
		}, nil)
	}
	waitAllDone(t, c)
	if n := len(c.slots); n != 0 {
		t.Fatalf("%d of %d slots are still taken after every create ended", n, cap(c.slots))
	}
	if n := called.Load(); n != 0 {
		t.Errorf("%d creates called the driver after the manager stopped", n)
	}
}

// The reconcile's context does not bound a create: a reconcile that ended
// (or hit the manager's reconciliation timeout) leaves its create running.
func TestCreatesOutliveTheReconcile(t *testing.T) {
	c := newCreates(1)
	defer c.stop()
	reconcileCtx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 3 { // one slot: each waits for the one before
		c.start(reconcileCtx, machineWithUID(i), nil, func(ctx context.Context) (*driver.CreateMachineResponse, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return &driver.CreateMachineResponse{ProviderID: "p"}, nil
		}, nil)
	}
	waitAllDone(t, c)
	for i := range 3 {
		if resp, err, ok := c.result(machineWithUID(i).UID); !ok || err != nil || resp.ProviderID != "p" {
			t.Errorf("create %d: resp %+v, err %v, done %v; want it made", i, resp, err, ok)
		}
	}
	if n := len(c.slots); n != 0 {
		t.Fatalf("%d slots still taken", n)
	}
}
