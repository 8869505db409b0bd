package machineset_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// TestMain runs the tests, then fails when a reconcile found a set's
// ledger different from its recount (export_test.go).
func TestMain(m *testing.M) {
	code := controllertest.Run(m)
	if d := machineset.LedgerDifferences(); len(d) > 0 {
		fmt.Fprintf(os.Stderr, "%d reconciles found a set's ledger different from its recount; the first: %s\n", len(d), d[0])
		code = 1
	}
	os.Exit(code)
}

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
