package drain

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodNodeNameIndex is the field Step selects a Node's pods by. The API
// server supports it natively; a controller-runtime cache needs an index of
// that name, registered with IndexPodNodeName:
//
//	mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, drain.PodNodeNameIndex, drain.IndexPodNodeName)
const PodNodeNameIndex = "spec.nodeName"

// IndexPodNodeName is the index function for PodNodeNameIndex: a pod's
// spec.nodeName, or nothing for a pod not bound to a Node.
func IndexPodNodeName(obj client.Object) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil
	}
	return []string{pod.Spec.NodeName}
}
