package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cache keeps of a Node what the controllers read — metadata but its
// managedFields, spec, conditions, addresses, nodeInfo (the kubelet version
// an in-place update waits for) — and nothing else of its status.
func TestCacheTransformTrimsNodes(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{ProviderID: "sim://x", Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:          []corev1.ContainerImage{{Names: []string{"registry/image:1"}, SizeBytes: 1}},
			VolumesAttached: []corev1.AttachedVolume{{Name: "v"}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.34.0"},
		},
	}
	out, err := cacheTransform(node)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Node)
	if len(got.ManagedFields) != 0 || len(got.Status.Images) != 0 || len(got.Status.VolumesAttached) != 0 {
		t.Errorf("kept what no controller reads: managedFields %v, images %v, volumesAttached %v",
			got.ManagedFields, got.Status.Images, got.Status.VolumesAttached)
	}
	if got.Labels["a"] != "b" || got.Spec.ProviderID != "sim://x" || !got.Spec.Unschedulable ||
		len(got.Status.Conditions) != 1 || len(got.Status.Addresses) != 1 || got.Status.NodeInfo.KubeletVersion != "v1.34.0" {
		t.Errorf("lost what the controllers read: %+v", got)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	out, err = cacheTransform(pod)
	if err != nil {
		t.Fatal(err)
	}
	if p := out.(*corev1.Pod); len(p.ManagedFields) != 0 || p.Status.Phase != corev1.PodRunning {
		t.Errorf("another kind: %+v", p)
	}
}
