package machine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// A target MachineSet being deleted is no target: the update fails at
// once, the Machine stays in its set and its VM untouched.
func TestInPlaceTargetBeingDeletedIsNoTarget(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	h.Class("c1", simSpec)
	h.Class("c2", `{"region":"local","zones":["local-a","local-b"],"tags":{"x":"y"}}`)
	w := newInPlaceWorld(h, classSpec("c1", ""), classSpec("c2", ""), nil, "m")
	set := &v1alpha1.MachineSet{}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(w.s2), set); err != nil {
		t.Fatal(err)
	}
	set.Finalizers = append(set.Finalizers, "test.millwright.dev/hold")
	if err := controllertest.Env.Client.Update(ctx, set); err != nil {
		t.Fatal(err)
	}
	if err := controllertest.Env.Client.Delete(ctx, set); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		set := &v1alpha1.MachineSet{}
		if err := controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(w.s2), set); err == nil {
			set.Finalizers = nil
			_ = controllertest.Env.Client.Update(ctx, set)
		}
	})
	w.pick("m")
	m := waitUpdate(h, "m", v1alpha1.InPlaceFailed, 30*time.Second)
	if !strings.Contains(m.Status.InPlaceUpdate.Message, "being deleted") {
		t.Errorf("message %q; want the target said to be being deleted", m.Status.InPlaceUpdate.Message)
	}
	if vm := h.VMs("m")[0]; vm.Updates != 0 || vm.ClassName != "c1" {
		t.Errorf("the VM was updated towards a set being deleted: %d updates, class %s", vm.Updates, vm.ClassName)
	}
}
