package aws

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The tags every instance carries (docs/providers/aws.md, "Tags"). The
// Machine's UID tag is how the driver finds an instance again; the
// cluster tag scopes every lookup to this cluster, so an instance of
// another cluster is never listed, changed or terminated.
const (
	// clusterTagPrefix + the cluster's name, value clusterTagValue: the
	// convention Kubernetes' AWS cloud provider, the EBS CSI driver and
	// Cluster API share for resources a cluster owns.
	clusterTagPrefix = "kubernetes.io/cluster/"
	clusterTagValue  = "owned"

	tagPrefix = "millwright.dev/"
	// TagClass is the MachineClass the instance was made from (or moved
	// to by an in-place update).
	TagClass = tagPrefix + "class"
	// TagNamespace is the Machine's (and its class's) namespace.
	TagNamespace = tagPrefix + "machine-namespace"
	// TagMachineName is the Machine's name.
	TagMachineName = tagPrefix + "machine-name"
	// TagMachineUID is the Machine's metadata.uid: the instance's identity.
	TagMachineUID = tagPrefix + "machine-uid"
	// TagNodeName is the name the instance's Node registers with.
	TagNodeName = tagPrefix + "node-name"
	// TagCapacityType is spot or on-demand: how the instance was bought.
	TagCapacityType = tagPrefix + "capacity-type"
	// TagName is EC2's display name: the Machine's name.
	TagName = "Name"
)

// ClusterTag is the key of the tag that marks the cluster's instances.
func ClusterTag(cluster string) string { return clusterTagPrefix + cluster }

// reservedTag reports whether a tag key is the driver's own, or AWS's:
// a class's providerSpec.tags may not set it.
func reservedTag(key string) bool {
	return strings.HasPrefix(key, tagPrefix) || strings.HasPrefix(key, clusterTagPrefix) ||
		key == TagName || strings.HasPrefix(strings.ToLower(key), "aws:")
}

// tagMap turns EC2 tags into a map.
func tagMap(tags []types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		if t.Key != nil && t.Value != nil {
			out[*t.Key] = *t.Value
		}
	}
	return out
}

// ec2Tags turns a map into EC2 tags, in a stable order.
func ec2Tags(m map[string]string) []types.Tag {
	keys := sortedKeys(m)
	out := make([]types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, types.Tag{Key: ptr(k), Value: ptr(m[k])})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
