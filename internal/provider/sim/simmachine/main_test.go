package simmachine

import (
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// env is the control plane shared by the package's tests, with every CRD
// of config/crd/bases installed, SimMachine's included; testClient reaches
// it with the SimMachine kinds known.
var (
	env        *testenv.Env
	testClient client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) (err error) {
		env = e
		testClient, err = client.New(env.Config, client.Options{Scheme: scheme()})
		return err
	}))
}

// scheme knows the core kinds, Millwright's and the provider's.
func scheme() *runtime.Scheme { return testenv.Scheme(infrav1.AddToScheme) }

// testConfig retries fast, so that faults cost the tests little time.
func testConfig() Config {
	return Config{
		BackoffBase: 50 * time.Millisecond, BackoffCap: 500 * time.Millisecond,
		LongBackoffBase: 100 * time.Millisecond, LongBackoffCap: time.Second,
		CallTimeout: 10 * time.Second,
	}
}

// startController runs the SimMachine controller against a sim of its
// own (no Nodes: the contract is about the SimMachine, not the Node) until
// the test ends, and returns the sim.
func startController(t *testing.T) *sim.Sim {
	t.Helper()
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.StartManager(t, scheme(), func(mgr ctrl.Manager) error {
		r := &Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Driver: s,
			Recorder: mgr.GetEventRecorder("simmachine"), Config: testConfig(),
		}
		return r.SetupWithManager(mgr, 4)
	})
	return s
}
