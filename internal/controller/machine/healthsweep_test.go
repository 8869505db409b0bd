package machine_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// A Running Machine is looked at again every HealthResync with no event
// to wake it: the health sweep does it, where each Machine used to ask
// for its own requeue. Each reconcile reads the reconciler's clock once.
func TestHealthSweepRechecksARunningMachine(t *testing.T) {
	var looks atomic.Int64
	h := controllertest.New(t, controllertest.Options{
		Config: func(c *machine.Config) { c.HealthResync = time.Second },
		Machine: func(r *machine.Reconciler) {
			r.Now = func() time.Time { looks.Add(1); return time.Now() }
		},
	})
	h.Class("c", simSpec)
	h.Machine("m", "c", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	time.Sleep(2 * time.Second) // the join's own events settle: they are not what is counted

	before := looks.Load()
	h.Eventually(5*time.Second, "the Running Machine looked at 3 times with a HealthResync of 1 s and no event", func() (bool, error) {
		return looks.Load()-before >= 3, nil
	})
}
