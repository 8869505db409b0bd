package aws

import (
	"context"
	"encoding/base64"
	"hash/fnv"
	"maps"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// maxUserData is EC2's limit on user data, before base64.
const maxUserData = 16 * 1024

// placement is where a Machine's instance is launched: a subnet (whose
// zone EC2 knows), or a zone of the default VPC, or neither (EC2 picks).
type placement struct {
	zone, subnet string
}

// placement picks the Machine's subnet and zone. A Machine placed in a
// zone (spec.failureDomain, set by the MachineDeployment's failure
// domains) gets that zone's subnet; one without gets a subnet picked by
// its UID, so Machines spread and a repeated create picks the same.
func (d *Driver) placement(ctx context.Context, cl *call, m *v1alpha1.Machine) (placement, error) {
	s, zone := cl.spec, m.Spec.FailureDomain
	if zone != "" && !strings.HasPrefix(zone, s.Region) {
		return placement{}, invalid("machine.spec.failureDomain", "zone %q is not in the class's region %s", zone, s.Region)
	}
	switch {
	case len(s.Subnets) > 0 && zone != "":
		subnet, ok := s.Subnets[zone]
		if !ok {
			return placement{}, invalid("machine.spec.failureDomain", "zone %q has no subnet in providerSpec.subnets (zones: %s)",
				zone, strings.Join(sortedKeys(s.Subnets), ", "))
		}
		return placement{zone: zone, subnet: subnet}, nil
	case len(s.Subnets) > 0:
		zones := sortedKeys(s.Subnets)
		z := zones[pick(string(m.UID), len(zones))]
		return placement{zone: z, subnet: s.Subnets[z]}, nil
	case len(s.SubnetIDs) > 0 && zone != "":
		for _, id := range s.SubnetIDs {
			z, err := d.subnetZone(ctx, cl, id)
			if err != nil {
				return placement{}, err
			}
			if z == zone {
				return placement{zone: zone, subnet: id}, nil
			}
		}
		return placement{}, invalid("machine.spec.failureDomain", "zone %q has none of providerSpec.subnetIDs %v", zone, s.SubnetIDs)
	case len(s.SubnetIDs) > 0:
		return placement{subnet: s.SubnetIDs[pick(string(m.UID), len(s.SubnetIDs))]}, nil
	}
	return placement{zone: zone}, nil
}

// pick is a stable choice of one of n for a Machine UID.
func pick(uid string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return int(h.Sum32() % uint32(n))
}

// subnetZone is the zone of a subnet, asked of EC2 once per subnet.
func (d *Driver) subnetZone(ctx context.Context, cl *call, id string) (string, error) {
	key := cl.spec.Region + "/" + id
	if z, ok := d.subnetZones.Load(key); ok {
		return z.(string), nil
	}
	out, err := cl.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{id}})
	if err != nil {
		return "", ec2Error(ctx, err, "looking up providerSpec.subnetIDs' %s", id)
	}
	if len(out.Subnets) != 1 {
		return "", invalid("providerSpec.subnetIDs", "subnet %s does not exist in %s", id, cl.spec.Region)
	}
	z := aws.ToString(out.Subnets[0].AvailabilityZone)
	d.subnetZones.Store(key, z)
	return z, nil
}

// rootDevice is the AMI's root device name, asked of EC2 once per AMI.
func (d *Driver) rootDevice(ctx context.Context, cl *call) (string, error) {
	key := cl.spec.Region + "/" + cl.spec.AMI
	if n, ok := d.rootDevices.Load(key); ok {
		return n.(string), nil
	}
	out, err := cl.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{cl.spec.AMI}})
	if err != nil {
		return "", ec2Error(ctx, err, "looking up the root device of providerSpec.ami %s", cl.spec.AMI)
	}
	if len(out.Images) != 1 || aws.ToString(out.Images[0].RootDeviceName) == "" {
		return "", invalid("providerSpec.ami", "%s does not exist in %s or has no root device", cl.spec.AMI, cl.spec.Region)
	}
	n := *out.Images[0].RootDeviceName
	d.rootDevices.Store(key, n)
	return n, nil
}

// launchInput is the RunInstances request of a Machine, without what
// depends on the capacity type (withCapacityType).
func (d *Driver) launchInput(ctx context.Context, cl *call, req *driver.CreateMachineRequest, p placement) (*ec2.RunInstancesInput, error) {
	s := cl.spec
	in := &ec2.RunInstancesInput{
		ImageId:          aws.String(s.AMI),
		InstanceType:     types.InstanceType(s.InstanceType),
		MinCount:         aws.Int32(1),
		MaxCount:         aws.Int32(1),
		SecurityGroupIds: s.SecurityGroupIDs,
		MetadataOptions:  metadataOptions(s.MetadataOptions),
	}
	if p.subnet != "" {
		in.SubnetId = aws.String(p.subnet)
	}
	if s.KeyName != "" {
		in.KeyName = aws.String(s.KeyName)
	}
	if ip := s.IAMInstanceProfile; ip != nil {
		in.IamInstanceProfile = &types.IamInstanceProfileSpecification{}
		if ip.ARN != "" {
			in.IamInstanceProfile.Arn = aws.String(ip.ARN)
		} else {
			in.IamInstanceProfile.Name = aws.String(ip.Name)
		}
	}
	if (p.zone != "" && p.subnet == "") || s.PlacementGroup != "" {
		in.Placement = &types.Placement{}
		if p.subnet == "" && p.zone != "" {
			in.Placement.AvailabilityZone = aws.String(p.zone)
		}
		if s.PlacementGroup != "" {
			in.Placement.GroupName = aws.String(s.PlacementGroup)
		}
	}
	for _, b := range s.BlockDevices {
		name := b.DeviceName
		if name == RootDevice {
			var err error
			if name, err = d.rootDevice(ctx, cl); err != nil {
				return nil, err
			}
		}
		in.BlockDeviceMappings = append(in.BlockDeviceMappings, blockDeviceMapping(name, b))
	}
	if req.Secret != nil {
		if ud := req.Secret.Data["userData"]; len(ud) > 0 {
			if len(ud) > maxUserData {
				return nil, invalid("secret.userData", "%d bytes: EC2 takes at most %d", len(ud), maxUserData)
			}
			in.UserData = aws.String(base64.StdEncoding.EncodeToString(ud))
		}
	}
	return in, nil
}

func blockDeviceMapping(name string, b BlockDevice) types.BlockDeviceMapping {
	ebs := &types.EbsBlockDevice{
		VolumeType:          types.VolumeType(b.volumeType()),
		Encrypted:           b.Encrypted,
		DeleteOnTermination: aws.Bool(b.DeleteOnTermination == nil || *b.DeleteOnTermination),
	}
	if b.Size != 0 {
		ebs.VolumeSize = aws.Int32(b.Size)
	}
	if b.IOPS != 0 {
		ebs.Iops = aws.Int32(b.IOPS)
	}
	if b.Throughput != 0 {
		ebs.Throughput = aws.Int32(b.Throughput)
	}
	if b.KMSKeyID != "" {
		ebs.KmsKeyId = aws.String(b.KMSKeyID)
	}
	return types.BlockDeviceMapping{DeviceName: aws.String(name), Ebs: ebs}
}

// metadataOptions are the class's, with IMDSv2 required and a hop limit
// of 1 unless it says otherwise: a pod off the host network must not
// reach the instance's role.
func metadataOptions(m *MetadataOptions) *types.InstanceMetadataOptionsRequest {
	o := &types.InstanceMetadataOptionsRequest{
		HttpTokens:              types.HttpTokensStateRequired,
		HttpPutResponseHopLimit: aws.Int32(1),
		HttpEndpoint:            types.InstanceMetadataEndpointStateEnabled,
	}
	if m == nil {
		return o
	}
	if m.HTTPTokens != "" {
		o.HttpTokens = types.HttpTokensState(m.HTTPTokens)
	}
	if m.HTTPPutResponseHopLimit != 0 {
		o.HttpPutResponseHopLimit = aws.Int32(m.HTTPPutResponseHopLimit)
	}
	if m.HTTPEndpoint != "" {
		o.HttpEndpoint = types.InstanceMetadataEndpointState(m.HTTPEndpoint)
	}
	if m.InstanceMetadataTags != "" {
		o.InstanceMetadataTags = types.InstanceMetadataTagsState(m.InstanceMetadataTags)
	}
	return o
}

// instanceTags are the tags of a Machine's instance: the class's, then
// the driver's own, which a class cannot override (validateTags).
func (d *Driver) instanceTags(s *ProviderSpec, class *v1alpha1.MachineClass, m *v1alpha1.Machine, node, capacityType string) map[string]string {
	t := maps.Clone(s.Tags)
	if t == nil {
		t = map[string]string{}
	}
	t[ClusterTag(d.opts.ClusterName)] = clusterTagValue
	t[TagClass] = class.Name
	t[TagNamespace] = m.Namespace
	t[TagMachineName] = m.Name
	t[TagMachineUID] = string(m.UID)
	t[TagNodeName] = node
	t[TagCapacityType] = capacityType
	t[TagName] = m.Name
	return t
}

// withCapacityType is in for one capacity type: the market options, the
// capacity reservation (on-demand only) and the tags, which record the
// capacity type on the instance.
func (d *Driver) withCapacityType(in *ec2.RunInstancesInput, cl *call, ct string, m *v1alpha1.Machine, node string) *ec2.RunInstancesInput {
	out := *in
	s := cl.spec
	tags := d.instanceTags(s, cl.class, m, node, ct)
	volumeTags := maps.Clone(s.Tags)
	if volumeTags == nil {
		volumeTags = map[string]string{}
	}
	volumeTags[ClusterTag(d.opts.ClusterName)] = clusterTagValue
	volumeTags[TagMachineUID] = string(m.UID)
	volumeTags[TagName] = m.Name
	out.TagSpecifications = []types.TagSpecification{
		{ResourceType: types.ResourceTypeInstance, Tags: ec2Tags(tags)},
		{ResourceType: types.ResourceTypeVolume, Tags: ec2Tags(volumeTags)},
	}
	out.InstanceMarketOptions, out.CapacityReservationSpecification = nil, nil
	switch ct {
	case CapacitySpot:
		spot := &types.SpotMarketOptions{
			SpotInstanceType:             types.SpotInstanceTypeOneTime,
			InstanceInterruptionBehavior: types.InstanceInterruptionBehaviorTerminate,
		}
		if s.SpotMaxPrice != "" {
			spot.MaxPrice = aws.String(s.SpotMaxPrice)
		}
		out.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{MarketType: types.MarketTypeSpot, SpotOptions: spot}
	case CapacityOnDemand:
		if cr := s.CapacityReservation; cr != nil {
			spec := &types.CapacityReservationSpecification{}
			if cr.ID != "" {
				spec.CapacityReservationTarget = &types.CapacityReservationTarget{CapacityReservationId: aws.String(cr.ID)}
			} else {
				spec.CapacityReservationPreference = types.CapacityReservationPreference(cr.Preference)
			}
			out.CapacityReservationSpecification = spec
		}
	}
	return &out
}
