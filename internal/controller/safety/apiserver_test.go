package safety_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/safety"
)

// While an API server is unreachable no Machine is declared Failed; on
// recovery the health timers start again, then the Machine may fail.
func TestAPIServerFreeze(t *testing.T) {
	const healthTimeout = 3 * time.Second
	var down atomic.Bool
	probe := safety.Probe{Name: "target", Check: func(context.Context) error {
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}}
	w := newWorld(t, setup{
		cfg:     testConfig(),
		probes:  []safety.Probe{probe},
		machine: func(c *machine.Config) { c.HealthTimeout = healthTimeout },
	})
	w.Class("c", controllertest.SimSpec)
	w.Machine("m", "c", nil)
	m := w.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	if _, err := w.Sim.Cloud().SetNodeReady(m.Status.NodeRef.Name, false); err != nil {
		t.Fatal(err)
	}
	m = w.WaitPhase("m", v1alpha1.PhaseUnknown, 10*time.Second)
	down.Store(true)
	w.Eventually(5*time.Second, "the freeze", func() (bool, error) {
		frozen, _ := w.safety.Gate().Frozen()
		return frozen, nil
	})
	frozenAt := time.Now()

	// Well past the health timeout, the Machine must still not be Failed.
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*healthTimeout, true,
		func(context.Context) (bool, error) { return w.Get("m").Status.Phase == v1alpha1.PhaseFailed, nil })
	if err == nil {
		t.Fatal("a Machine was declared Failed while the manager was frozen")
	}

	down.Store(false)
	w.Eventually(10*time.Second, "the unfreeze", func() (bool, error) {
		frozen, _ := w.safety.Gate().Frozen()
		return !frozen, nil
	})
	after := w.Get("m")
	if after.Status.UnhealthySince == nil || !after.Status.UnhealthySince.After(frozenAt) {
		t.Fatalf("unhealthySince %v was not restarted after the freeze began at %v (was %v)",
			after.Status.UnhealthySince, frozenAt, m.Status.UnhealthySince)
	}
	// The timer runs again: the still NotReady Machine fails after it.
	w.WaitPhase("m", v1alpha1.PhaseFailed, 3*healthTimeout)
}
