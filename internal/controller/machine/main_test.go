package machine_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestMain runs the package's tests and then fails the run when any of
// them made the controller change a Machine's phase in a way
// machine.PhaseTransitions (and so the diagram of docs/machine-phases.md)
// does not show. With -v it also lists the rows no test made.
func TestMain(m *testing.M) {
	var mu sync.Mutex
	seen := map[[2]v1alpha1.MachinePhase]bool{}
	machine.OnPhaseChange(func(from, to v1alpha1.MachinePhase) {
		mu.Lock()
		defer mu.Unlock()
		seen[[2]v1alpha1.MachinePhase{from, to}] = true
	})
	code := controllertest.Run(m)
	mu.Lock()
	defer mu.Unlock()
	for t := range seen {
		if !machine.PhaseTransitionListed(t[0], t[1]) {
			fmt.Fprintf(os.Stderr, "FAIL: phase change missing from machine.PhaseTransitions: %q -> %q\n", t[0], t[1])
			code = 1
		}
	}
	if testing.Verbose() {
		for _, t := range machine.PhaseTransitions {
			if !seen[[2]v1alpha1.MachinePhase{t.From, t.To}] {
				fmt.Printf("phase change no test made: %q -> %q (%s)\n", t.From, t.To, t.Cause)
			}
		}
	}
	os.Exit(code)
}

// newHarness starts a harness running the machine controller, with edit
// applied to its configuration.
func newHarness(t *testing.T, edit func(*machine.Config)) *controllertest.Harness {
	return controllertest.New(t, controllertest.Options{Config: edit})
}

const simSpec = controllertest.SimSpec

func testConfig() machine.Config { return controllertest.TestConfig() }

// byHand is a machine Reconciler outside any manager, for a test that
// reconciles the Machine Prefix+name itself (the harness's manager
// stopped), and the request for that Machine.
func byHand(h *controllertest.Harness, name string) (*machine.Reconciler, reconcile.Request) {
	env := controllertest.Env.Client
	r := &machine.Reconciler{
		Client: env, APIReader: env, Target: env, TargetAPI: env,
		Drivers: map[string]driver.Driver{"sim": h.Sim}, Namespace: h.NS, Config: h.Config,
	}
	r.StartCreates()
	return r, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: h.NS, Name: h.Prefix + name}}
}
