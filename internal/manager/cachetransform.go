package manager

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

var stripManagedFields = crcache.TransformStripManagedFields()

// cacheTransform is the transform of every cached object: managedFields
// dropped (no controller reads them), of a Node's status only its
// conditions, addresses and kubelet version kept, equal strings shared,
// a Machine's labels and annotations shared with the Machines that have
// the same ones, and slices clipped to their length (compact.go).
//
// The controllers read a cached Node's metadata, spec, conditions and
// kubelet version (what an in-place update waits for,
// docs/in-place-updates.md), never the rest of its status (the drain
// reads volumesAttached from the API server); a real Node's status.images
// alone is often the largest part of it, and a heap profile at 5000 Nodes
// showed 12.5 MiB decoding Node status (docs/benchmarks-history.md); the
// rest of nodeInfo (machine, boot and system IDs, one each per Node)
// held 2 MiB more at 5400 Nodes (docs/benchmarks.md). Writes
// are unaffected: a Node patch is computed between two trimmed copies, and
// the API server keeps a Node's status on an update of the Node.
func cacheTransform(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	if o, err := meta.Accessor(obj); err == nil {
		compactMeta(o)
	}
	switch o := obj.(type) {
	case *corev1.Node:
		o.Status = corev1.NodeStatus{Conditions: o.Status.Conditions, Addresses: o.Status.Addresses,
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: o.Status.NodeInfo.KubeletVersion}}
		compactNode(o)
	case *v1alpha1.Machine:
		compactMachine(o)
	}
	return obj, nil
}
