package machine_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// TestMain runs the package's tests and then fails the run when any of
// them made the controller change a Machine's phase in a way
// machine.PhaseTransitions (and so the diagram of docs/machine-phases.md)
// does not show.
func TestMain(m *testing.M) {
	var mu sync.Mutex
	offTable := map[string]bool{}
	machine.OnOffTablePhaseChange(func(from, to v1alpha1.MachinePhase) {
		mu.Lock()
		defer mu.Unlock()
		offTable[fmt.Sprintf("%q -> %q", from, to)] = true
	})
	code := controllertest.Run(m)
	mu.Lock()
	defer mu.Unlock()
	for t := range offTable {
		fmt.Fprintln(os.Stderr, "FAIL: phase change missing from machine.PhaseTransitions:", t)
		code = 1
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
