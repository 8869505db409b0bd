package tokenbootstrap

import (
	"context"
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

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
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if testClient, err = client.New(env.Config, client.Options{Scheme: scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping control plane:", err)
	}
	os.Exit(code)
}

func scheme() *runtime.Scheme {
	s := testenv.Scheme()
	if err := bootstrapv1.AddToScheme(s); err != nil {
		panic(err) // static registration
	}
	return s
}

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
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Target: testClient,
		Defaults: testDefaults(t), Recorder: mgr.GetEventRecorder("tokenbootstrapconfig"),
	}
	if err := r.SetupWithManager(mgr, 4); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}
