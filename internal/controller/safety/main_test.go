package safety_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
	"github.com/millwright-dev/millwright/internal/controller/safety"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func TestMain(m *testing.M) { os.Exit(controllertest.Run(m)) }

// testConfig has periods long enough that only what a test does triggers
// a pass or a check, unless the test shortens them.
func testConfig() safety.Config {
	cfg := safety.DefaultConfig()
	cfg.OrphanVMsPeriod = time.Hour
	cfg.OrphanConfirmAfter = time.Hour
	cfg.APIServerCheckPeriod = 100 * time.Millisecond
	cfg.APIServerCheckTimeout = time.Second
	cfg.DriverCallTimeout = 10 * time.Second
	cfg.BackoffBase, cfg.BackoffCap = 100*time.Millisecond, time.Second
	return cfg
}

type world struct {
	*controllertest.Harness
	safety *safety.Controller
}

type setup struct {
	cfg        safety.Config
	probes     []safety.Probe
	machineSet bool // also run the MachineSet controller
	machine    func(*machine.Config)
	// wrap, when set, gives the safety controller each driver wrapped (a
	// renamedDriver, a pagesDriver); the machine controller keeps the
	// drivers as they are.
	wrap func(driver.Driver) driver.Driver
}

// newWorld runs the machine controller, wired to a safety controller as
// the manager wires it, and the safety controller.
func newWorld(t *testing.T, s setup) *world {
	sc := safety.New(s.cfg, nil, s.probes)
	h := controllertest.New(t, controllertest.Options{
		Config: s.machine,
		Machine: func(r *machine.Reconciler) {
			sc.Drivers = r.Drivers // the harness's sim
			if s.wrap != nil {
				sc.Drivers = map[string]driver.Driver{}
				for name, d := range r.Drivers {
					sc.Drivers[name] = s.wrap(d)
				}
			}
			r.Gate = sc.Gate()
			r.OnOrphansSuspected = sc.OrphansSuspected
		},
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			if s.machineSet {
				ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller"), Views: controllertest.ViewsOf(mgr)}
				if err := ms.SetupWithManager(ctx, mgr, 2); err != nil {
					return err
				}
			}
			sc.Views = controllertest.ViewsOf(mgr)
			return sc.SetupWithManager(ctx, mgr, mgr)
		},
	})
	return &world{Harness: h, safety: sc}
}

// orphan makes a VM of class claiming machineName ("" for a made-up name).
func (w *world) orphan(class, providerSpec, machineName string) sim.VM {
	w.T.Helper()
	vm, err := w.Sim.Cloud().CreateOrphan(sim.OrphanRequest{
		Namespace: w.NS, ClassName: class, MachineName: machineName,
		ProviderSpec: json.RawMessage(providerSpec),
	})
	if err != nil {
		w.T.Fatal(err)
	}
	return vm
}

func (w *world) vmExists(id string) bool {
	_, ok := w.Sim.Cloud().VM(id)
	return ok
}

// pass triggers an orphan collection pass and waits for it to complete.
func (w *world) pass() {
	w.T.Helper()
	o := w.safety.Orphans()
	before := o.Passes()
	o.Trigger()
	w.waitPasses(before + 1)
}

func (w *world) waitPasses(n int64) {
	w.T.Helper()
	w.Eventually(20*time.Second, "orphan collection passes", func() (bool, error) {
		return w.safety.Orphans().Passes() >= n, nil
	})
}
