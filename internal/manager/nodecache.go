package manager

import (
	corev1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

var stripManagedFields = crcache.TransformStripManagedFields()

// cacheTransform is the transform of every cached object: managedFields
// dropped (no controller reads them), and of a Node's status only its
// conditions, addresses and nodeInfo kept. The controllers read a cached
// Node's metadata, spec, conditions and nodeInfo (the kubelet version an
// in-place update waits for, docs/in-place-updates.md), never the rest of
// its status (the drain reads volumesAttached from the API server); a real
// Node's status.images
// alone is often the largest part of it, and a heap profile at 5000 Nodes
// showed 12.5 MiB decoding Node status (docs/benchmarks-history.md). Writes are
// unaffected: a Node patch is computed between two trimmed copies, and the
// API server keeps a Node's status on an update of the Node.
func cacheTransform(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if node, ok := obj.(*corev1.Node); ok && err == nil {
		node.Status = corev1.NodeStatus{Conditions: node.Status.Conditions, Addresses: node.Status.Addresses, NodeInfo: node.Status.NodeInfo}
	}
	return obj, err
}
