package simmachinetemplate

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// env is the control plane shared by the package's tests, with every CRD
// of config/crd/bases installed, SimMachineTemplate's included; testClient
// reaches it with the sim's kinds known.
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

// startController runs the SimMachineTemplate controller until the test
// ends. It watches every namespace, so the tests do not run in parallel:
// two controllers would both act on each test's templates.
func startController(t *testing.T) {
	t.Helper()
	env.StartManager(t, scheme(), func(mgr ctrl.Manager) error {
		r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("simmachinetemplate")}
		return r.SetupWithManager(mgr)
	})
}
