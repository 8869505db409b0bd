package ownerindex

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// ProviderIDIndex is the cache field index on spec.providerID that the
// machine controller registers on Machines (control cluster) and on Nodes
// (target cluster), with IndexProviderID. Other controllers read through
// it with MachinesWithProviderID and NodesWithProviderID, so it lives
// here, below all of them.
//
// Its values are buckets of providerIDs, not the providerIDs: a cache
// index keeps a set of object keys per value, and one set per providerID
// (two per Machine: its namespace's and every namespace's) held about 5
// MiB of a manager's heap at 5000 Machines and their Nodes
// (docs/benchmarks.md, "The heap at 5000 Machines"). A bucket holds a
// few objects at that size; the readers keep those with the providerID.
const ProviderIDIndex = "spec.providerID.bucket"

// providerIDBuckets is how many buckets the providerIDs fall into: about
// five Machines in each at 5000.
const providerIDBuckets = 1024

// providerIDBucket is the index value of providerID id.
func providerIDBucket(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return fmt.Sprintf("%03x", h.Sum32()%providerIDBuckets)
}

// IndexProviderID is the index function of ProviderIDIndex on Machines
// and Nodes.
func IndexProviderID(o client.Object) []string {
	var id string
	switch o := o.(type) {
	case *v1alpha1.Machine:
		id = o.Spec.ProviderID
	case *corev1.Node:
		id = o.Spec.ProviderID
	}
	if id == "" {
		return nil
	}
	return []string{providerIDBucket(id)}
}

// MachinesWithProviderID lists, through ProviderIDIndex, the Machines
// whose spec.providerID is id (not empty); opts add to the List
// (client.UnsafeDisableDeepCopy, ...).
func MachinesWithProviderID(ctx context.Context, c client.Reader, id string, opts ...client.ListOption) ([]v1alpha1.Machine, error) {
	list := &v1alpha1.MachineList{}
	if err := c.List(ctx, list, append(opts, client.MatchingFields{ProviderIDIndex: providerIDBucket(id)})...); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(m v1alpha1.Machine) bool { return m.Spec.ProviderID != id }), nil
}

// NodesWithProviderID lists, through ProviderIDIndex, the Nodes whose
// spec.providerID is id (not empty).
func NodesWithProviderID(ctx context.Context, c client.Reader, id string) ([]corev1.Node, error) {
	list := &corev1.NodeList{}
	if err := c.List(ctx, list, client.MatchingFields{ProviderIDIndex: providerIDBucket(id)}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(n corev1.Node) bool { return n.Spec.ProviderID != id }), nil
}
