package contract

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func obj(status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"status": status}}
}

func TestContractFields(t *testing.T) {
	if _, _, failed := Failure(obj(map[string]any{"ready": true})); failed {
		t.Error("no failureReason/failureMessage is no failure")
	}
	if r, m, failed := Failure(obj(map[string]any{"failureMessage": "gone"})); !failed || r != "ProviderFailure" || m != "gone" {
		t.Errorf("a message alone is a failure with a generic reason: %q %q %v", r, m, failed)
	}
	for _, tc := range []struct {
		status map[string]any
		want   bool
	}{
		{map[string]any{"ready": true}, true},
		{map[string]any{"initialization": map[string]any{"provisioned": true}}, true},
		{map[string]any{"ready": false}, false},
		{map[string]any{}, false},
	} {
		if got := InfrastructureProvisioned(obj(tc.status)); got != tc.want {
			t.Errorf("InfrastructureProvisioned(%v) = %v", tc.status, got)
		}
	}
	for _, tc := range []struct {
		status map[string]any
		ready  bool
	}{
		{map[string]any{"dataSecretName": "s", "ready": true}, true},
		{map[string]any{"dataSecretName": "s", "initialization": map[string]any{"dataSecretCreated": true}}, true},
		{map[string]any{"dataSecretName": "s"}, false}, // named, not yet written
		{map[string]any{"ready": true}, false},         // ready without a Secret breaks the contract
	} {
		if _, got := BootstrapDataSecret(obj(tc.status)); got != tc.ready {
			t.Errorf("BootstrapDataSecret(%v) ready = %v", tc.status, got)
		}
	}
	c, ok := ReadyCondition(obj(map[string]any{"conditions": []any{
		map[string]any{"type": "Paused", "status": "False"},
		map[string]any{"type": "Ready", "status": "False", "reason": "Booting", "message": "wait"},
	}}))
	if !ok || c != (Condition{Status: "False", Reason: "Booting", Message: "wait"}) {
		t.Errorf("ReadyCondition = %+v, %v", c, ok)
	}
}

func TestMachineOwnerPrefersTheController(t *testing.T) {
	gv := v1alpha1.GroupVersion.String()
	refs := []metav1.OwnerReference{
		{APIVersion: "other.example/v1", Kind: "Machine", Name: "foreign", Controller: ptr.To(true)},
		{APIVersion: gv, Kind: "MachineSet", Name: "set"},
		{APIVersion: gv, Kind: "Machine", Name: "plain"},
		{APIVersion: gv, Kind: "Machine", Name: "controller", Controller: ptr.To(true)},
	}
	if got := machineOwner(refs); got == nil || got.Name != "controller" {
		t.Fatalf("machineOwner = %+v, want the controller Machine of our group", got)
	}
	if got := machineOwner(refs[:3]); got == nil || got.Name != "plain" {
		t.Fatalf("machineOwner = %+v, want any Machine of our group without a controller one", got)
	}
	if got := machineOwner(refs[:2]); got != nil {
		t.Fatalf("machineOwner = %+v, want none", got)
	}
}
