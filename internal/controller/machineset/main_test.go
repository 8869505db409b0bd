package machineset_test

import (
	"context"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
)

func TestMain(m *testing.M) { os.Exit(controllertest.Run(m)) }

// newHarness runs the machine and MachineSet controllers.
func newHarness(t *testing.T) *controllertest.Harness { return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with the managers' options edited.
func newHarnessWith(t *testing.T, manager func(*ctrl.Options)) *controllertest.Harness {
	return controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			r := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller")}
			return r.SetupWithManager(ctx, mgr, 2)
		},
		Manager: manager,
	})
}
