package aws

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/names"
)

// liveStates are the states of an instance that exists for the contract:
// it runs or can run again. shutting-down and terminated are gone.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// providerIDPrefix starts every providerID: aws:///ZONE/INSTANCE-ID, the
// form Kubernetes' AWS cloud provider gives Nodes.
const providerIDPrefix = "aws:///"

// ProviderID is the providerID of an instance in a zone.
func ProviderID(zone, instanceID string) string { return providerIDPrefix + zone + "/" + instanceID }

// ParseProviderID returns the instance ID of aws:///ZONE/ID (or
// aws://ZONE/ID, or aws:///ID, forms Kubernetes also accepts).
func ParseProviderID(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, "aws://")
	if !ok {
		return "", fmt.Errorf("%q is not an AWS providerID (aws:///ZONE/INSTANCE-ID)", id)
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	inst := parts[len(parts)-1]
	if len(parts) > 2 || !strings.HasPrefix(inst, "i-") || len(inst) < 10 {
		return "", fmt.Errorf("%q is not an AWS providerID (aws:///ZONE/INSTANCE-ID)", id)
	}
	return inst, nil
}

func filter(name string, values ...string) types.Filter {
	return types.Filter{Name: aws.String(name), Values: values}
}

// tagFilter filters on a tag's value: tag:KEY, not tag-key, whose
// filters on two keys EC2-compatible servers (moto) merge into one.
func tagFilter(key string, values ...string) types.Filter { return filter("tag:"+key, values...) }

// describe lists every instance the filters match, page by page
// (describePage).
func (d *Driver) describe(ctx context.Context, c *ec2.Client, filters ...types.Filter) ([]types.Instance, error) {
	var out []types.Instance
	for token := ""; ; {
		page, next, err := d.describePage(ctx, c, d.opts.PageSize, token, filters)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		token = next
	}
}

// liveOf lists the cluster's live instances made for the Machine UID.
func (d *Driver) liveOf(ctx context.Context, c *ec2.Client, uid string) ([]types.Instance, error) {
	insts, err := d.describe(ctx, c, tagFilter(ClusterTag(d.opts.ClusterName), clusterTagValue),
		tagFilter(TagMachineUID, uid), filter("instance-state-name", liveStates...))
	if err != nil {
		return nil, ec2Error(ctx, err, "looking up the instances of Machine UID %s", uid)
	}
	return insts, nil
}

// byID returns the instance of an ID in any state; nil when EC2 does not
// know it. The instance-id filter answers an unknown ID with nothing,
// where InstanceIds would fail the call.
func (d *Driver) byID(ctx context.Context, c *ec2.Client, id string) (*types.Instance, error) {
	insts, err := d.describe(ctx, c, filter("instance-id", id))
	if err != nil {
		return nil, ec2Error(ctx, err, "looking up instance %s", id)
	}
	if len(insts) == 0 {
		return nil, nil
	}
	return &insts[0], nil
}

func live(i *types.Instance) bool {
	return i != nil && i.State != nil && isLive(string(i.State.Name))
}

func isLive(state string) bool {
	for _, s := range liveStates {
		if s == state {
			return true
		}
	}
	return false
}

func stateOf(i *types.Instance) string {
	if i.State == nil {
		return "unknown"
	}
	return string(i.State.Name)
}

func zoneOf(i *types.Instance) string {
	if i.Placement == nil {
		return ""
	}
	return aws.ToString(i.Placement.AvailabilityZone)
}

func providerIDOf(i *types.Instance) string {
	return ProviderID(zoneOf(i), aws.ToString(i.InstanceId))
}

// ours reports whether the instance carries this cluster's tag.
func (d *Driver) ours(i *types.Instance) bool {
	return tagMap(i.Tags)[ClusterTag(d.opts.ClusterName)] == clusterTagValue
}

// addresses are the instance's addresses, as the Machine shows them.
func addresses(i *types.Instance, nodeName string) []v1alpha1.MachineAddress {
	var out []v1alpha1.MachineAddress
	add := func(t v1alpha1.MachineAddressType, v *string) {
		if aws.ToString(v) != "" {
			out = append(out, v1alpha1.MachineAddress{Type: t, Address: *v})
		}
	}
	add(v1alpha1.MachineInternalIP, i.PrivateIpAddress)
	add(v1alpha1.MachineExternalIP, i.PublicIpAddress)
	add(v1alpha1.MachineInternalDNS, i.PrivateDnsName)
	add(v1alpha1.MachineExternalDNS, i.PublicDnsName)
	add(v1alpha1.MachineHostName, &nodeName)
	return out
}

// nodeName is the name the Machine's Node registers with: the Machine's
// name, unless a live instance of another Machine (one of the same name
// in another namespace) has it; then the name gets a suffix from the
// Machine's UID, as the libvirt driver does. Node names are
// cluster-wide, Machine names per namespace. The caller holds the lock
// of the Machine's name (d.names).
func (d *Driver) nodeName(ctx context.Context, c *ec2.Client, m *v1alpha1.Machine) (string, error) {
	insts, err := d.describe(ctx, c, tagFilter(ClusterTag(d.opts.ClusterName), clusterTagValue),
		tagFilter(TagNodeName, m.Name), filter("instance-state-name", liveStates...))
	if err != nil {
		return "", ec2Error(ctx, err, "looking up the instances of Node name %s", m.Name)
	}
	for _, i := range insts {
		if tagMap(i.Tags)[TagMachineUID] != string(m.UID) {
			return nodeNameWithSuffix(m), nil
		}
	}
	return m.Name, nil
}

func nodeNameWithSuffix(m *v1alpha1.Machine) string {
	suffix := strings.ReplaceAll(string(m.UID), "-", "")
	if len(suffix) > 5 {
		suffix = suffix[:5]
	}
	return names.Join(m.Name, suffix, names.MaxLabelValue)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
