package machine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// A deletion that runs through in one reconcile announces itself with one
// Normal Event (an Event is an API write), which names the drain too.
func TestDeletionInOneReconcileEmitsOneEvent(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("m", "small", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	h.DeleteMachine("m")
	h.WaitGone("m")
	h.ExpectEvent("NodeDeleted", "m")
	events := &corev1.EventList{}
	if err := controllertest.Env.Client.List(context.Background(), events, client.InNamespace(h.NS)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		switch {
		case e.InvolvedObject.Kind != "Machine" || e.Type != corev1.EventTypeNormal:
		case e.Reason == "NodeDeleted" && strings.HasPrefix(e.Message, "drained Node ") && strings.Contains(e.Message, "; deleted Node "):
		default:
			t.Errorf("Normal Event %s %q; want only NodeDeleted naming the drain", e.Reason, e.Message)
		}
	}
}
