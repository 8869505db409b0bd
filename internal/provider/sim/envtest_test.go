package sim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// deleteNodesAfter removes the test's Nodes, and the Leases kwok made for
// them, from the shared control plane. Without kube-controller-manager no
// garbage collector removes a Lease with its Node, and a Lease left over
// from another kwok process keeps the next kwok from adopting the Node.
func deleteNodesAfter(t *testing.T, c client.Client, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			_ = c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
			_ = c.Delete(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: corev1.NamespaceNodeLease}})
		}
	})
}

// On a real API server, builtin mode registers a Ready Node shaped like
// the class says, and killing or deleting the VM makes it NotReady.
func TestEnvtestBuiltinNodeLifecycle(t *testing.T) {
	e := controlPlane(t)
	c := e.Client
	s, err := New(Options{Client: c, NodeMode: NodeModeBuiltin})
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	admin := httptest.NewServer(s.AdminHandler())
	t.Cleanup(admin.Close)
	deleteNodesAfter(t, c, "envtest-killed", "envtest-deleted")

	mc := classWithTemplate("envtest", `{"region":"local","zones":["local-a","local-b"],"instanceType":"sim.medium"}`)
	killed := mustCreate(t, s, machine("envtest-killed", "envtest"), mc)
	deleted := mustCreate(t, s, machine("envtest-deleted", "envtest"), mc)

	node := waitReady(t, c, "envtest-killed", corev1.ConditionTrue)
	if node.Spec.ProviderID != killed.ProviderID {
		t.Errorf("providerID %q; want %q", node.Spec.ProviderID, killed.ProviderID)
	}
	vm := s.Cloud().MachineVMs("default", "envtest-killed")[0]
	for k, v := range map[string]string{
		corev1.LabelHostname: "envtest-killed", corev1.LabelTopologyRegion: "local", corev1.LabelTopologyZone: vm.Zone,
		corev1.LabelInstanceTypeStable: "sim.medium", corev1.LabelArchStable: "arm64", "node.millwright.dev/pool": "small",
	} {
		if node.Labels[k] != v {
			t.Errorf("label %s=%q; want %q", k, node.Labels[k], v)
		}
	}
	uninit := corev1.Taint{Key: v1alpha1.UninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule}
	if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&uninit) }) {
		t.Errorf("taints %v lack %s:NoSchedule", node.Spec.Taints, v1alpha1.UninitializedTaintKey)
	}
	if q := node.Status.Capacity[corev1.ResourceCPU]; q.String() != "3" {
		t.Errorf("cpu capacity %s; want the nodeTemplate's 3", q.String())
	}
	if q := node.Status.Allocatable[corev1.ResourceMemory]; q.String() != "8Gi" {
		t.Errorf("memory allocatable %s; want sim.medium's 8Gi", q.String())
	}
	if len(node.Status.Addresses) != 2 || node.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: vm.InternalIP}) {
		t.Errorf("addresses %v", node.Status.Addresses)
	}

	// Kill through the admin endpoint, as an end-to-end test would.
	resp, err := admin.Client().Post(admin.URL+"/vms/"+vm.ID+"/kill", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("kill: %s", resp.Status)
	}
	waitReady(t, c, "envtest-killed", corev1.ConditionUnknown)

	waitReady(t, c, "envtest-deleted", corev1.ConditionTrue)
	if err := del(s, machine("envtest-deleted", "envtest"), mc); err != nil {
		t.Fatal(err)
	}
	n := waitReady(t, c, "envtest-deleted", corev1.ConditionUnknown)
	if n.Spec.ProviderID != deleted.ProviderID {
		t.Errorf("the deleted VM's Node changed providerID to %q", n.Spec.ProviderID)
	}
	// The sim never deletes Nodes: that is the machine controller's job.
	if _, ok := getNode(t, c, "envtest-deleted"); !ok {
		t.Fatal("deleting the VM deleted its Node")
	}
	if _, err := status(s, machine("envtest-deleted", "envtest"), mc); driver.CodeOf(err) != driver.NotFound {
		t.Fatalf("status after delete: %v", err)
	}
}
