package machine_test

import (
	"context"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// A deleted Machine that another controller's finalizer still holds, once
// ours is removed, is not requeued: nothing is left to do for it until
// the other finalizer goes, and that is an event. It was requeued every
// 200 ms for as long as the other finalizer stayed.
func TestReleasedMachineIsNotRequeued(t *testing.T) {
	const theirs = "example.com/hold"
	h := newHarness(t, nil)
	h.StopManager() // the test reconciles by hand
	h.Machine("m", "never", func(m *v1alpha1.Machine) { m.Finalizers = []string{v1alpha1.MachineFinalizer, theirs} })
	h.DeleteMachine("m")
	t.Cleanup(func() {
		m := h.Get("m")
		patch := client.MergeFrom(m.DeepCopy())
		m.Finalizers = nil
		_ = controllertest.Env.Client.Patch(context.Background(), m, patch)
	})

	r, req := byHand(h, "m")
	for i := 0; slices.Contains(h.Get("m").Finalizers, v1alpha1.MachineFinalizer); i++ {
		if i == 10 {
			t.Fatalf("our finalizer is still there after %d reconciles: %+v", i, h.Get("m").Status.LastOperation)
		}
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	before := h.Get("m").ResourceVersion
	res, err := r.Reconcile(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 0 {
		t.Fatalf("a Machine released by our finalizer, held by another's, is requeued (%+v): a poll for as long as theirs stays", res)
	}
	if after := h.Get("m").ResourceVersion; after != before {
		t.Fatalf("the reconcile of a released Machine wrote it (version %s -> %s)", before, after)
	}
}
