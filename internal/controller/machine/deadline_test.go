package machine_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/internal/controller/requeue"
)

// A Machine on its way to Running (here waiting for a class that does not
// exist) asks to be called back for its creation deadline in steps of
// requeue.DeadlineStep, not once for the whole 20 minutes: the queue would
// keep that request, one entry per Machine, long after the Machine ran.
func TestWaitingMachineAsksForItsCreationDeadlineInSteps(t *testing.T) {
	h := newHarness(t, nil)
	if h.Config.CreationTimeout <= requeue.DeadlineStep {
		t.Fatalf("the creation timeout %s must be longer than a step for this test", h.Config.CreationTimeout)
	}
	h.StopManager() // the test reconciles by hand
	h.Machine("m", "never", nil)

	r, req := byHand(h, "m")
	var res reconcile.Result
	for range 3 { // the finalizer, the Pending status, then nothing new
		var err error
		if res, err = r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > requeue.DeadlineStep {
		t.Fatalf("a Machine waiting for its class asks to be called back after %s; want within %s (%+v)", res.RequeueAfter, requeue.DeadlineStep, h.Get("m").Status.LastOperation)
	}
}
