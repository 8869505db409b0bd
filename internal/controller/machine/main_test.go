package machine_test

import (
	"os"
	"testing"

	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

func TestMain(m *testing.M) { os.Exit(controllertest.Run(m)) }

// newHarness starts a harness running the machine controller, with edit
// applied to its configuration.
func newHarness(t *testing.T, edit func(*machine.Config)) *controllertest.Harness {
	return controllertest.New(t, controllertest.Options{Config: edit})
}

const simSpec = controllertest.SimSpec

func testConfig() machine.Config { return controllertest.TestConfig() }
