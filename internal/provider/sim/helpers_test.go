package sim

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

const basicSpec = `{"region":"local","zones":["local-a","local-b"],"instanceType":"sim.small"}`

// epoch is the fake clocks' start: fixed, so that every run is the same.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newTestSim makes a Sim on a fake clock.
func newTestSim(t *testing.T, opts Options) (*Sim, *clocktesting.FakeClock) {
	t.Helper()
	fc := clocktesting.NewFakeClock(epoch)
	if opts.Clock == nil {
		opts.Clock = fc
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, fc
}

// start runs the Sim until the test ends.
func start(t *testing.T, s *Sim) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

func class(name, spec string) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1alpha1.MachineClassSpec{
			Provider:     "sim",
			ProviderSpec: runtime.RawExtension{Raw: []byte(spec)},
		},
	}
}

func machine(name, className string) *v1alpha1.Machine {
	return &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: className}},
	}
}

func create(s *Sim, m *v1alpha1.Machine, mc *v1alpha1.MachineClass) (*driver.CreateMachineResponse, error) {
	return s.CreateMachine(context.Background(), &driver.CreateMachineRequest{Machine: m, MachineClass: mc})
}

func mustCreate(t *testing.T, s *Sim, m *v1alpha1.Machine, mc *v1alpha1.MachineClass) *driver.CreateMachineResponse {
	t.Helper()
	resp, err := create(s, m, mc)
	if err != nil {
		t.Fatalf("CreateMachine(%s): %v", m.Name, err)
	}
	return resp
}

func del(s *Sim, m *v1alpha1.Machine, mc *v1alpha1.MachineClass) error {
	_, err := s.DeleteMachine(context.Background(), &driver.DeleteMachineRequest{Machine: m, MachineClass: mc})
	return err
}

func status(s *Sim, m *v1alpha1.Machine, mc *v1alpha1.MachineClass) (*driver.GetMachineStatusResponse, error) {
	return s.GetMachineStatus(context.Background(), &driver.GetMachineStatusRequest{Machine: m, MachineClass: mc})
}

func wantCode(t *testing.T, what string, err error, want driver.Code) {
	t.Helper()
	if got := driver.CodeOf(err); got != want {
		t.Fatalf("%s: got %v (code %s); want %s", what, err, got, want)
	}
}

// The envtest control plane starts on first use, so that unit-test runs
// and fuzzing workers do not pay for it.
var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

func controlPlane(t *testing.T) *testenv.Env {
	t.Helper()
	envOnce.Do(func() { env, envErr = testenv.Start() })
	if envErr != nil {
		t.Fatalf("starting the control plane: %v", envErr)
	}
	return env
}

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control plane:", err)
		}
	}
	os.Exit(code)
}
