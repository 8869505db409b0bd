package machine_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestNodeDeletionTimeoutWithTheTargetClusterStopped: once the VM is gone,
// a Machine whose target API server is stopped finishes deleting after its
// node deletion timeout, with a Warning Event, instead of hanging forever.
// The pre-terminate hook holds the deletion at the last step before the VM
// is deleted, so the target is stopped after the drain and before the Node
// is deleted.
func TestNodeDeletionTimeoutWithTheTargetClusterStopped(t *testing.T) {
	const ns = "node-deletion-timeout"
	cfg := testConfig()
	cfg.NodeDeletionTimeout = 0 // the flag would retry forever; the Machine's override must win
	target, h := splitClusters(t, ns, cfg)
	h.Create(&v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", ProviderSpec: runtime.RawExtension{Raw: []byte(simSpec)}},
	})
	h.Machine("m", "c", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{preTerminateHook: ""}
		m.Spec.Lifecycle.NodeDeletionTimeout = &metav1.Duration{Duration: 2 * time.Second}
	})
	running := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	h.DeleteMachine("m")
	h.WaitStep("m", v1alpha1.StepPreTerminateHooks)

	// A kube-apiserver that does not stop in time is killed: either way
	// the target is gone.
	if err := target.Stop(); err != nil {
		t.Logf("stopping the target: %v", err)
	}
	h.RemoveAnnotation("m", preTerminateHook)
	h.WaitGone("m")
	h.ExpectEvent("NodeDeletionTimedOut", "m")
	if vms := h.VMs("m"); len(vms) != 0 {
		t.Errorf("the Machine went without deleting its VM: %v", vms)
	}
	events := &corev1.EventList{}
	if err := controllertest.Env.Client.List(t.Context(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "NodeDeletionTimedOut" && e.Type != corev1.EventTypeWarning {
			t.Errorf("event %s is %s, want Warning", e.Reason, e.Type)
		}
	}
	t.Logf("Machine %s gone without its Node %s", running.Name, running.Status.NodeRef.Name)
}

// TestDeletionWithTheTargetClusterStoppedBeforeIt: with the target API
// server stopped before the deletion starts, the cordon and the drain give
// up after the drain timeout and the Node's deletion after the node
// deletion timeout, each with a Warning Event; the VM is deleted.
func TestDeletionWithTheTargetClusterStoppedBeforeIt(t *testing.T) {
	const ns = "target-stopped-before-deletion"
	target, h := splitClusters(t, ns, testConfig())
	h.Create(&v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", ProviderSpec: runtime.RawExtension{Raw: []byte(simSpec)}},
	})
	h.Machine("m", "c", func(m *v1alpha1.Machine) {
		m.Spec.Lifecycle.DrainTimeout = &metav1.Duration{Duration: time.Second}
		m.Spec.Lifecycle.NodeDeletionTimeout = &metav1.Duration{Duration: time.Second}
	})
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	if err := target.Stop(); err != nil {
		t.Logf("stopping the target: %v", err)
	}
	h.DeleteMachine("m")
	h.WaitGone("m")
	for _, reason := range []string{"CordonSkipped", "ForceDrain", "DrainSkipped", "NodeDeletionTimedOut"} {
		h.ExpectEvent(reason, "m")
	}
	if vms := h.VMs("m"); len(vms) != 0 {
		t.Errorf("the Machine went without deleting its VM: %v", vms)
	}
}
