package machine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// The meltdown protection's memory of recent decisions ages by the
// reconciler's clock, not the wall clock.
func TestReplacementLedgerAgesByTheReconcilersClock(t *testing.T) {
	h := newHarness(t, nil) // a namespace; its manager does not touch these Machines' fate
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := testConfig()
	cfg.MaxConcurrentReplacements = 1
	r := &machine.Reconciler{Client: controllertest.Env.Client, Config: cfg, Now: clock.Now}
	var ms []*v1alpha1.Machine
	for _, name := range []string{"a", "b"} {
		ms = append(ms, h.Machine(name, "none", func(m *v1alpha1.Machine) {
			m.Labels = map[string]string{v1alpha1.MachineSetNameLabel: "set"}
		}))
	}
	ctx := context.Background()
	allowed := func(m *v1alpha1.Machine) bool {
		t.Helper()
		ok, _, err := r.ReplacementAllowed(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !allowed(ms[0]) {
		t.Fatal("the first replacement of the group was refused")
	}
	if allowed(ms[1]) {
		t.Fatal("a second replacement was allowed while the first is pending (limit 1)")
	}
	// The first decision never shows in the Machines (its write was lost):
	// once the ledger's time has passed on the reconciler's clock, it is
	// forgotten.
	clock.Step(machine.LedgerTTL + time.Second)
	if !allowed(ms[1]) {
		t.Fatalf("still refused %s after the ledger's time passed on the reconciler's clock", machine.LedgerTTL)
	}
}
