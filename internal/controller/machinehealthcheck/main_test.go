package machinehealthcheck_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/machinehealthcheck"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// TestMain runs the package's tests, and fails when a reconcile found a
// health check's kept verdicts different from a judgement of every
// Machine (export_test.go).
func TestMain(m *testing.M) {
	code := controllertest.Run(m)
	if d := machinehealthcheck.JudgementDifferences(); len(d) > 0 {
		fmt.Fprintf(os.Stderr, "%d reconciles found a health check's kept verdicts different from judging every Machine; the first: %s\n", len(d), d[0])
		code = 1
	}
	os.Exit(code)
}

// newHarness runs the machine, MachineSet, health check and disruption
// budget controllers; the health check asks the budgets before it remediates.
func newHarness(t *testing.T) *controllertest.Harness {
	return controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller")}
			if err := ms.SetupWithManager(ctx, mgr, 2); err != nil {
				return err
			}
			mdb := &machinedisruptionbudget.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
			if err := mdb.SetupWithManager(mgr, 2); err != nil {
				return err
			}
			gate := &disruption.Gate{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("disruption-gate")}
			r := &machinehealthcheck.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Target: mgr.GetClient(),
				Recorder: mgr.GetEventRecorder("machinehealthcheck-controller"), Gate: gate, Views: controllertest.ViewsOf(mgr)}
			return r.SetupWithManager(mgr, mgr, 2)
		},
	})
}
