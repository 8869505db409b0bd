package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/millwright-dev/millwright/internal/ctrlconfig"
)

// Run is the body of a TestMain: it starts a control plane, hands it to
// ready (which keeps what the package's tests need, and may fail), runs
// the tests and stops the control plane. It returns the exit code:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m, func(e *testenv.Env) error { env = e; return nil })) }
func Run(m *testing.M, ready func(*Env) error) int {
	env, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control plane:", err)
		}
	}()
	if err := ready(env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// StartManager runs a controller-runtime manager on the control plane, with
// scheme and what setup registers, until the test ends. Metrics are off
// and controller names may repeat, since every test makes its own.
func (e *Env) StartManager(t testing.TB, scheme *runtime.Scheme, setup func(ctrl.Manager) error) {
	t.Helper()
	e.StartManagerWith(t, ManagerOptions(scheme), setup)
}

// ManagerOptions are StartManager's options: scheme, no metrics server,
// controller names that may repeat. A test edits them for
// StartManagerWith.
func ManagerOptions(scheme *runtime.Scheme) ctrl.Options {
	return ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.ForTests(),
	}
}

// StartManagerWith is StartManager with the manager's options given.
func (e *Env) StartManagerWith(t testing.TB, opts ctrl.Options, setup func(ctrl.Manager) error) {
	t.Helper()
	mgr, err := ctrl.NewManager(e.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
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

// Eventually polls cond every 50ms until it holds and returns how long
// that took; it fails the test after bound with cond's last error. An
// error does not end the wait (the object may not exist yet): the last
// one is reported if the bound passes.
func Eventually(t testing.TB, bound time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	began := time.Now()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, bound, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok && err == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting %s for %s: %v (last error: %v)", bound, what, err, last)
	}
	return time.Since(began)
}

// Consistently polls cond every 100ms for d and fails the test as soon as
// it is false or errs: the check that something does not happen, without
// sleeping through the window blind.
func Consistently(t testing.TB, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, d, true, func(context.Context) (bool, error) {
		ok, err := cond()
		if err == nil && !ok {
			return false, fmt.Errorf("no longer %s", what)
		}
		return false, err
	})
	if !wait.Interrupted(err) {
		t.Fatalf("during %s: %v", d, err)
	}
}
