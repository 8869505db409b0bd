package machineset_test

import (
	"context"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
	"github.com/millwright-dev/millwright/internal/disruption"
)

func TestMain(m *testing.M) { os.Exit(controllertest.Run(m)) }

// newHarness runs the machine, MachineSet and disruption budget
// controllers, the set asking the budgets' gate.
func newHarness(t *testing.T) *controllertest.Harness { return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with the managers' options edited.
func newHarnessWith(t *testing.T, manager func(*ctrl.Options)) *controllertest.Harness {
	return controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			mdb := &machinedisruptionbudget.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
			if err := mdb.SetupWithManager(mgr, 1); err != nil {
				return err
			}
			gate := &disruption.Gate{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("disruption-gate")}
			r := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller"), Gate: gate, Views: controllertest.ViewsOf(mgr)}
			return r.SetupWithManager(ctx, mgr, 2)
		},
		Manager: manager,
	})
}
