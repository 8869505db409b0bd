package machine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
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
