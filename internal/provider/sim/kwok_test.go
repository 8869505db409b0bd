package sim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// startKwok runs bin/kwok against the control plane, with the Stages every
// kwok here runs (internal/kwok), until the test ends.
func startKwok(t *testing.T) {
	t.Helper()
	e := controlPlane(t)
	p, err := e.StartKwok(t.Context(), t.TempDir())
	if err != nil {
		t.Fatalf("starting kwok: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kwok log:\n%s", p.LogTail(50))
		}
		_ = p.Stop()
	})
}

// With a real kwok v0.8.0 running the node-not-ready Stage (internal/kwok), kwok keeps
// the sim's Nodes Ready, and the sim's label makes them NotReady and, once
// removed, Ready again.
func TestKwokMakesSimNodesReadyAndNotReady(t *testing.T) {
	e := controlPlane(t)
	startKwok(t)
	s, err := New(Options{Client: e.Client, NodeMode: NodeModeKwok})
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	deleteNodesAfter(t, e.Client, "kwok-killed", "kwok-sick")
	mc := class("kwok", basicSpec)
	mustCreate(t, s, machine("kwok-killed", "kwok"), mc)
	mustCreate(t, s, machine("kwok-sick", "kwok"), mc)
	waitReady(t, e.Client, "kwok-killed", corev1.ConditionTrue)
	waitReady(t, e.Client, "kwok-sick", corev1.ConditionTrue)

	vm := s.Cloud().MachineVMs("default", "kwok-killed")[0]
	if _, err := s.Cloud().KillVM(vm.ID); err != nil {
		t.Fatal(err)
	}
	if _, reason := readyOf(waitReady(t, e.Client, "kwok-killed", corev1.ConditionFalse)); reason != "NodeStatusUnknown" {
		t.Errorf("kwok's reason %q; want the sim's", reason)
	}

	if _, err := s.Cloud().SetNodeReady("kwok-sick", false); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e.Client, "kwok-sick", corev1.ConditionFalse)
	if _, err := s.Cloud().SetNodeReady("kwok-sick", true); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e.Client, "kwok-sick", corev1.ConditionTrue)
	// The killed VM's Node stays NotReady: kwok does not undo the label.
	if n, _ := getNode(t, e.Client, "kwok-killed"); n == nil {
		t.Fatal("the killed VM's Node is gone")
	} else if st, _ := readyOf(n); st != corev1.ConditionFalse {
		t.Fatalf("the killed VM's Node went %s", st)
	}
}
