package machine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func TestClassChangeIsAppliedInPlace(t *testing.T) {
	h := newHarness(t, nil)
	class := h.Class("tagged", `{"region":"local","zones":["local-a"],"tags":{"team":"infra"}}`)
	h.Machine("m", "tagged", nil)
	before := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	applied := before.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation]
	if applied == "" {
		t.Fatal("no last-applied providerSpec recorded at creation")
	}
	if vm := h.VMs("m")[0]; vm.Updates != 0 {
		t.Fatalf("a fresh VM was hot-updated %d times", vm.Updates)
	}

	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.ProviderSpec = runtime.RawExtension{Raw: []byte(`{"region":"local","zones":["local-a"],"tags":{"team":"payments","cost":"42"}}`)}
	if err := controllertest.Env.Client.Patch(context.Background(), class, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(60*time.Second, "the VM to carry the new tags", func() (bool, error) {
		vm := h.VMs("m")[0]
		return vm.Updates == 1 && vm.Tags["team"] == "payments" && vm.Tags["cost"] == "42", nil
	})

	// A tag the class drops is removed from the VM: the driver is told what
	// was applied before, so it can tell dropped tags from others' tags.
	patch = client.MergeFrom(class.DeepCopy())
	class.Spec.ProviderSpec = runtime.RawExtension{Raw: []byte(`{"region":"local","zones":["local-a"],"tags":{"team":"payments"}}`)}
	if err := controllertest.Env.Client.Patch(context.Background(), class, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(60*time.Second, "the dropped tag to go", func() (bool, error) {
		vm := h.VMs("m")[0]
		_, cost := vm.Tags["cost"]
		return vm.Updates == 2 && !cost && vm.Tags["team"] == "payments", nil
	})
	h.Eventually(60*time.Second, "the new hash to be recorded", func() (bool, error) {
		m := h.Get("m")
		return m.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation] != applied &&
			m.Status.LastOperation.Type == v1alpha1.OperationUpdate && m.Status.LastOperation.State == v1alpha1.OperationSucceeded, nil
	})
	if n := len(h.Sim.Cloud().History()); n != 1 {
		t.Fatalf("the class change replaced the VM (%d VMs ever created)", n)
	}
	if h.Get("m").Spec.ProviderID != before.Spec.ProviderID {
		t.Fatal("the providerID changed")
	}
}

// A driver that skips an update (Unimplemented) has not applied it: the
// change is offered again, and reaches the driver once it implements
// UpdateMachine (here: from its second call on).
func TestSkippedClassChangeIsOfferedAgain(t *testing.T) {
	h := newHarness(t, nil)
	const faults = `"faults":{"update":{"code":"Unimplemented","count":1}}`
	class := h.Class("tagged", `{"region":"local","zones":["local-a"],"tags":{"team":"infra"},`+faults+`}`)
	h.Machine("m", "tagged", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)

	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.ProviderSpec = runtime.RawExtension{Raw: []byte(`{"region":"local","zones":["local-a"],"tags":{"team":"payments"},` + faults + `}`)}
	if err := controllertest.Env.Client.Patch(context.Background(), class, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(20*time.Second, "the VM to carry the new tag after the skipped update", func() (bool, error) {
		vm := h.VMs("m")[0]
		return vm.Updates == 1 && vm.Tags["team"] == "payments", nil
	})
	h.Eventually(10*time.Second, "the new spec recorded as applied", func() (bool, error) {
		m := h.Get("m")
		return strings.Contains(m.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation], "payments") &&
			m.Status.LastOperation.Type == v1alpha1.OperationUpdate && m.Status.LastOperation.State == v1alpha1.OperationSucceeded, nil
	})
}

// noUpdates is a driver that says it does not implement UpdateMachine,
// and counts the calls it gets all the same.
type noUpdates struct {
	driver.Driver
	calls *atomic.Int32
}

func (d noUpdates) GetPluginInfo(ctx context.Context, req *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	info, err := d.Driver.GetPluginInfo(ctx, req)
	if err != nil {
		return nil, err
	}
	info.Implements = slices.DeleteFunc(slices.Clone(info.Implements), func(m driver.Method) bool { return m == driver.MethodUpdateMachine })
	return info, nil
}

func (d noUpdates) UpdateMachine(context.Context, *driver.UpdateMachineRequest) (*driver.UpdateMachineResponse, error) {
	d.calls.Add(1)
	return nil, driver.Errorf(driver.Unimplemented, "no UpdateMachine")
}

// A class changed in place whose driver does not implement UpdateMachine
// (its GetPluginInfo says so) is said once, on the class; its Machines are
// left alone: no call, no failed Update in their status, no Event on them
// at every backoff.
func TestClassChangeWithoutUpdateMachineIsSaidOnce(t *testing.T) {
	var calls atomic.Int32
	h := controllertest.New(t, controllertest.Options{Machine: func(r *machine.Reconciler) {
		r.Drivers["sim"] = noUpdates{Driver: r.Drivers["sim"], calls: &calls}
	}})
	class := h.Class("tagged", `{"region":"local","zones":["local-a"],"tags":{"team":"infra"}}`)
	h.Machine("m", "tagged", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)

	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.ProviderSpec = runtime.RawExtension{Raw: []byte(`{"region":"local","zones":["local-a"],"tags":{"team":"payments"}}`)}
	if err := controllertest.Env.Client.Patch(context.Background(), class, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the class change to be said or tried", func() (bool, error) {
		if op := h.Get("m").Status.LastOperation; op.Type == v1alpha1.OperationUpdate {
			return false, fmt.Errorf("the Machine recorded an update (%s: %s) its driver does not implement", op.State, op.Description)
		}
		if n := calls.Load(); n > 0 {
			return false, fmt.Errorf("UpdateMachine called %d times on a driver that does not implement it", n)
		}
		return len(classEvents(h, "tagged", machine.ReasonUpdateNotImplemented)) > 0, nil
	})
	if op := h.Get("m").Status.LastOperation; op.Type == v1alpha1.OperationUpdate {
		t.Fatalf("the Machine recorded an update (%s: %s)", op.State, op.Description)
	}
	if n := len(classEvents(h, "tagged", machine.ReasonUpdateNotImplemented)); n != 1 {
		t.Fatalf("%d %s Events on the class, want 1", n, machine.ReasonUpdateNotImplemented)
	}
}

// classEvents lists the Events with reason on the class named name.
func classEvents(h *controllertest.Harness, name, reason string) []corev1.Event {
	events := &corev1.EventList{}
	if err := controllertest.Env.Client.List(context.Background(), events, client.InNamespace(h.NS)); err != nil {
		h.T.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "MachineClass" && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
