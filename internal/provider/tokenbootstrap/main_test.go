package tokenbootstrap

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// env is the control plane shared by the package's tests, with every CRD
// of config/crd/bases installed, TokenBootstrapConfig's included. It is
// both the control and the target cluster: tokens land in its kube-system.
// testClient reaches it with the bootstrap kinds known.
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
func scheme() *runtime.Scheme { return testenv.Scheme(bootstrapv1.AddToScheme) }

// testDefaults are the controller's defaults as the manager derives them
// from its target cluster: envtest's URL and CA.
func testDefaults(t *testing.T) Defaults {
	t.Helper()
	d, err := DefaultsFor(env.Config, "")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// directReconciler reconciles without a manager or cache, for tests that
// call Reconcile themselves (retries, races).
func directReconciler(t *testing.T) *Reconciler {
	return &Reconciler{Client: testClient, APIReader: testClient, Target: testClient, Defaults: testDefaults(t)}
}

// startController runs the controller in a manager of its own until the
// test ends.
func startController(t *testing.T) {
	t.Helper()
	startControllerWith(t, testDefaults(t))
}

// startControllerWith is startController with the defaults d.
func startControllerWith(t *testing.T, d Defaults) {
	t.Helper()
	env.StartManager(t, scheme(), func(mgr ctrl.Manager) error {
		r := &Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Target: testClient,
			Defaults: d, Recorder: mgr.GetEventRecorder("tokenbootstrapconfig"),
		}
		return r.SetupWithManager(mgr, 4)
	})
}
