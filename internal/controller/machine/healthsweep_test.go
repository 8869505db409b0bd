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
	m := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	// The join's own writes (the Node's sync, the last status) wake the
	// Machine too, and are not what is counted: wait until neither the
	// Machine nor its Node has changed for a second.
	var seen string
	var since time.Time
	h.Eventually(15*time.Second, "the Machine and its Node to stop changing after the join", func() (bool, error) {
		n, err := h.Node(m.Status.NodeRef.Name)
		if err != nil {
			return false, err
		}
		if v := h.Get("m").ResourceVersion + "/" + n.ResourceVersion; v != seen {
			seen, since = v, time.Now()
		}
		return time.Since(since) >= time.Second, nil
	})

	before := looks.Load()
	h.Eventually(5*time.Second, "the Running Machine looked at 3 times with a HealthResync of 1 s and no event", func() (bool, error) {
		return looks.Load()-before >= 3, nil
	})
}
