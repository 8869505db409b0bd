package manager_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// exitBound is how long a program may take to stop after SIGTERM.
const exitBound = 20 * time.Second

// The two programs, started as an operator would, provision a Machine
// through the driver socket; the manager's probes and metrics tell the
// truth, including when the driver goes away; SIGTERM stops both with
// status 0.
func TestManagerAndSimBinaries(t *testing.T) {
	ns := namespace(t, "binaries")
	sim, endpoint := startSim(t, t.TempDir())
	mgr := startManager(t, "millwright-manager", ns, endpoint)

	createClass(t, ns)
	createMachine(t, ns, ns+"-m1")
	waitRunning(t, ns, ns+"-m1", 60*time.Second)

	testenv.Eventually(t, 30*time.Second, "/readyz to answer 200", func() (bool, error) {
		code, body, err := mgr.readyz()
		if err == nil && code != 200 {
			err = fmt.Errorf("/readyz %d: %s", code, body)
		}
		return code == 200, err
	})
	if code, _, err := testenv.HTTPGet("http://" + mgr.health + "/healthz"); code != 200 {
		t.Errorf("/healthz: %d %v", code, err)
	}
	testenv.Eventually(t, 10*time.Second, "/metrics to count the Running Machine", func() (bool, error) {
		body, err := mgr.scrape()
		v, ok := metric(body, "millwright_machines", label("namespace", ns), label("phase", "Running"))
		return ok && v == 1, err
	})

	// Without its driver the manager cannot make progress: not ready, and
	// the failing check names the driver.
	sim.Signal(t, syscall.SIGTERM)
	if code := sim.WaitExit(t, exitBound); code != 0 {
		t.Errorf("millwright-sim exited with %d after SIGTERM; want 0", code)
	}
	testenv.Eventually(t, 15*time.Second, "/readyz to fail without the driver", func() (bool, error) {
		code, body, err := mgr.readyz()
		return code == 500 && strings.Contains(body, "[-]driver-sim failed"), err
	})

	mgr.Signal(t, syscall.SIGTERM)
	if code := mgr.WaitExit(t, exitBound); code != 0 {
		t.Errorf("millwright-manager exited with %d after SIGTERM; want 0", code)
	}
}
