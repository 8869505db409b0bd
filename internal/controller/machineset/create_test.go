package machineset_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestMachinesAreCreatedWithTheFinalizer checks, from a watch that sees each
// Machine as it was created, that the MachineSet creates its Machines with
// the machine finalizer: the machine controller then needs no write of its
// own to add it.
func TestMachinesAreCreatedWithTheFinalizer(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	w := watchMachines(h)
	set(h, "fin", 3, "small", nil)
	timeout := time.After(60 * time.Second)
	for added := 0; added < 3; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended")
			}
			m, isMachine := ev.Object.(*v1alpha1.Machine)
			if !isMachine || ev.Type != watch.Added {
				continue
			}
			added++
			if !controllerutil.ContainsFinalizer(m, v1alpha1.MachineFinalizer) {
				t.Errorf("Machine %s was created with finalizers %v, want %s", m.Name, m.Finalizers, v1alpha1.MachineFinalizer)
			}
		case <-timeout:
			t.Fatalf("only %d of 3 Machines were created in 60s", added)
		}
	}
}

// watchMachines watches the harness namespace's Machines from the API
// server itself, so that every creation is seen; stopped with the test.
func watchMachines(h *controllertest.Harness) watch.Interface {
	h.T.Helper()
	wc, err := client.NewWithWatch(controllertest.Env.Config, client.Options{Scheme: controllertest.Env.Scheme})
	if err != nil {
		h.T.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &v1alpha1.MachineList{}, client.InNamespace(h.NS))
	if err != nil {
		h.T.Fatal(err)
	}
	h.T.Cleanup(w.Stop)
	return w
}
