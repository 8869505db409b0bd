package machine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// These tests play the contract providers themselves: they register
// provider kinds while the manager runs (a new provider needs no restart)
// and write the providers' status fields by hand, so that only the machine
// controller's side of the contract is under test.

const testGroup = controllertest.ProviderGroup

func createObj(h *controllertest.Harness, kind, name string) {
	h.T.Helper()
	h.Create(controllertest.ProviderObject(kind, h.NS, name))
}

// setStatus merges fields into the status of the object (as its provider would).
func setStatus(h *controllertest.Harness, kind, name string, status map[string]any) {
	h.T.Helper()
	u, err := h.GetProviderObject(kind, name)
	if err != nil {
		h.T.Fatal(err)
	}
	patch := client.MergeFrom(u.DeepCopy())
	for k, v := range status {
		if err := unstructured.SetNestedField(u.Object, v, "status", k); err != nil {
			h.T.Fatal(err)
		}
	}
	if err := controllertest.Env.Client.Status().Patch(context.Background(), u, patch); err != nil {
		h.T.Fatal(err)
	}
}

func setSpec(h *controllertest.Harness, kind, name string, spec map[string]any) {
	h.T.Helper()
	u, err := h.GetProviderObject(kind, name)
	if err != nil {
		h.T.Fatal(err)
	}
	patch := client.MergeFrom(u.DeepCopy())
	for k, v := range spec {
		if err := unstructured.SetNestedField(u.Object, v, "spec", k); err != nil {
			h.T.Fatal(err)
		}
	}
	if err := controllertest.Env.Client.Patch(context.Background(), u, patch); err != nil {
		h.T.Fatal(err)
	}
}

// contractMachine creates a Machine backed by infra kind/name, bootstrapped
// by config kind/name.
func contractMachine(h *controllertest.Harness, name, infraKind, bootKind string) {
	h.T.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + name, Namespace: h.NS},
		Spec: v1alpha1.MachineSpec{
			InfrastructureRef: &v1alpha1.ContractReference{APIGroup: testGroup, Kind: infraKind, Name: name},
			Bootstrap:         v1alpha1.Bootstrap{ConfigRef: &v1alpha1.ContractReference{APIGroup: testGroup, Kind: bootKind, Name: name}},
		},
	}
	h.Create(m)
}

func waitCondition(h *controllertest.Harness, name, condType string, status metav1.ConditionStatus, reason string) *v1alpha1.Machine {
	h.T.Helper()
	var m *v1alpha1.Machine
	h.Eventually(20*time.Second, fmt.Sprintf("%s %s=%s (%s)", name, condType, status, reason), func() (bool, error) {
		m = h.Get(name)
		c := meta.FindStatusCondition(m.Status.Conditions, condType)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason), nil
	})
	return m
}

func controlledBy(u *unstructured.Unstructured, m *v1alpha1.Machine) bool {
	ref := metav1.GetControllerOf(u)
	return ref != nil && ref.UID == m.UID
}

// A contract Machine goes Pending → Provisioning → Provisioned → Running
// as its providers report, with the fields the contract names copied; on
// deletion its provider objects go before its Node. A driver Machine in
// the same namespace runs alongside (a mixed fleet).
func TestContractMachineLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c", simSpec)
	h.Machine("driver", "c", nil)
	controllertest.RegisterProviderKind(t, "LifeMachine", "v1alpha0_v1alpha1")
	controllertest.RegisterProviderKind(t, "LifeConfig", "v1alpha1")
	createObj(h, "LifeMachine", "m")
	createObj(h, "LifeConfig", "m")
	contractMachine(h, "m", "LifeMachine", "LifeConfig")

	m := h.WaitPhase("m", v1alpha1.PhasePending, 20*time.Second)
	for _, kind := range []string{"LifeMachine", "LifeConfig"} {
		h.Eventually(10*time.Second, kind+" owned by the Machine", func() (bool, error) {
			u, err := h.GetProviderObject(kind, "m")
			return err == nil && controlledBy(u, m), err
		})
	}

	setStatus(h, "LifeConfig", "m", map[string]any{"dataSecretName": "m-bootstrap", "ready": true})
	h.Eventually(10*time.Second, "dataSecretName copied", func() (bool, error) {
		b := h.Get("m").Spec.Bootstrap.DataSecretName
		return b != nil && *b == "m-bootstrap", nil
	})
	h.WaitPhase("m", v1alpha1.PhaseProvisioning, 10*time.Second)

	providerID := "contract-test://" + h.Prefix + "m"
	setSpec(h, "LifeMachine", "m", map[string]any{"providerID": providerID, "failureDomain": "zone-b"})
	setStatus(h, "LifeMachine", "m", map[string]any{
		"initialization": map[string]any{"provisioned": true},
		"addresses":      []any{map[string]any{"type": "InternalIP", "address": "10.0.0.7"}},
		"conditions":     []any{map[string]any{"type": "Ready", "status": "True", "reason": "InstanceRunning", "message": "up", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
	})
	m = h.WaitPhase("m", v1alpha1.PhaseProvisioned, 10*time.Second)
	if m.Spec.ProviderID != providerID || m.Spec.FailureDomain != "zone-b" ||
		len(m.Status.Addresses) != 1 || m.Status.Addresses[0].Address != "10.0.0.7" {
		t.Fatalf("copied: providerID %q failureDomain %q addresses %v", m.Spec.ProviderID, m.Spec.FailureDomain, m.Status.Addresses)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InfrastructureReadyCondition); c.Reason != "InstanceRunning" {
		t.Errorf("InfrastructureReady %+v does not mirror the provider's Ready condition", c)
	}

	node := readyNode(h, h.Prefix+"m", providerID)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 20*time.Second)
	h.WaitPhase("driver", v1alpha1.PhaseRunning, 20*time.Second)

	h.DeleteMachine("m")
	h.Eventually(20*time.Second, "the provider objects deleted", func() (bool, error) {
		_, e1 := h.GetProviderObject("LifeMachine", "m")
		_, e2 := h.GetProviderObject("LifeConfig", "m")
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2), nil
	})
	h.WaitGone("m")
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(node), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Node outlived its Machine: %v", err)
	}
}

// The Node is deleted only once the InfraMachine is gone: a provider whose
// finalizer holds it keeps the Machine at the infrastructure step.
func TestContractDeletionWaitsForProvider(t *testing.T) {
	h := newHarness(t, nil)
	controllertest.RegisterProviderKind(t, "SlowMachine", "v1alpha1")
	controllertest.RegisterProviderKind(t, "SlowConfig", "v1alpha1")
	infra := controllertest.ProviderObject("SlowMachine", h.NS, "m")
	infra.SetFinalizers([]string{"provider.test/hold"})
	h.Create(infra)
	createObj(h, "SlowConfig", "m")
	contractMachine(h, "m", "SlowMachine", "SlowConfig")
	setStatus(h, "SlowConfig", "m", map[string]any{"dataSecretName": "s", "initialization": map[string]any{"dataSecretCreated": true}})
	providerID := "contract-test://" + h.Prefix + "m"
	setSpec(h, "SlowMachine", "m", map[string]any{"providerID": providerID})
	setStatus(h, "SlowMachine", "m", map[string]any{"ready": true})
	node := readyNode(h, h.Prefix+"m", providerID)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 20*time.Second)

	h.DeleteMachine("m")
	h.WaitStep("m", v1alpha1.StepDeleteInfrastructure)
	h.Consistently(2*time.Second, "the deletion held at the infrastructure step, the Node kept", func() (bool, error) {
		if h.Get("m").Status.Deletion.Step != v1alpha1.StepDeleteInfrastructure {
			return false, nil
		}
		return true, controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(node), &corev1.Node{})
	})
	u, err := h.GetProviderObject("SlowMachine", "m")
	if err != nil || u.GetDeletionTimestamp() == nil {
		t.Fatalf("the InfraMachine was not asked to delete: %v", err)
	}
	patch := client.MergeFrom(u.DeepCopy())
	u.SetFinalizers(nil) // the provider finishes
	if err := controllertest.Env.Client.Patch(context.Background(), u, patch); err != nil {
		t.Fatal(err)
	}
	h.WaitGone("m")
}

// A terminal failure reported by the InfraMachine fails the Machine.
func TestContractTerminalFailure(t *testing.T) {
	h := newHarness(t, nil)
	controllertest.RegisterProviderKind(t, "FailMachine", "v1alpha1")
	createObj(h, "FailMachine", "m")
	h.Create(&v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + "m", Namespace: h.NS},
		Spec: v1alpha1.MachineSpec{
			InfrastructureRef: &v1alpha1.ContractReference{APIGroup: testGroup, Kind: "FailMachine", Name: "m"},
			Bootstrap:         v1alpha1.Bootstrap{DataSecretName: ptr.To("data")},
		},
	})
	h.WaitPhase("m", v1alpha1.PhaseProvisioning, 20*time.Second)
	setStatus(h, "FailMachine", "m", map[string]any{"failureReason": "InsufficientCapacity", "failureMessage": "no such instance type"})
	m := h.WaitPhase("m", v1alpha1.PhaseFailed, 10*time.Second)
	if m.Status.FailureReason != "InsufficientCapacity" || !strings.Contains(m.Status.FailureMessage, "no such instance type") {
		t.Fatalf("failure %q %q; want the provider's", m.Status.FailureReason, m.Status.FailureMessage)
	}
}

// Objects that break the contract give a clear condition, not a crash or
// a silent wait: an unknown kind, a CRD without the contract label, a
// missing object, ready without providerID.
func TestContractViolations(t *testing.T) {
	h := newHarness(t, nil)
	controllertest.RegisterProviderKind(t, "NoLabelMachine", "")
	controllertest.RegisterProviderKind(t, "GoodMachine", "v1alpha1")
	createObj(h, "NoLabelMachine", "m")
	createObj(h, "GoodMachine", "noid")
	setStatus(h, "GoodMachine", "noid", map[string]any{"ready": true})
	for _, tc := range []struct{ name, kind, object, reason string }{
		{"unknown", "NoSuchMachine", "m", contract.ReasonKindUnknown},
		{"nolabel", "NoLabelMachine", "m", contract.ReasonContractMissing},
		{"missing", "GoodMachine", "absent", contract.ReasonObjectNotFound},
		{"noid", "GoodMachine", "noid", contract.ReasonContractViolation},
	} {
		h.Create(&v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + tc.name, Namespace: h.NS},
			Spec: v1alpha1.MachineSpec{
				InfrastructureRef: &v1alpha1.ContractReference{APIGroup: testGroup, Kind: tc.kind, Name: tc.object},
				Bootstrap:         v1alpha1.Bootstrap{DataSecretName: ptr.To("data")},
			},
		})
		waitCondition(h, tc.name, v1alpha1.InfrastructureReadyCondition, metav1.ConditionFalse, tc.reason)
		h.ExpectEvent(tc.reason, tc.name)
	}
}

// readyNode creates a Ready Node with providerID, as a kubelet would.
func readyNode(h *controllertest.Harness, name, providerID string) *corev1.Node {
	h.T.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	h.Create(node)
	h.T.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), node) })
	// A patch, not an update: the machine controller may already be
	// syncing the Node's labels.
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := controllertest.Env.Client.Status().Patch(context.Background(), node, patch); err != nil {
		h.T.Fatal(err)
	}
	return node
}
