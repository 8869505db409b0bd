package aws

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// UpdateMachine applies the class's tags, security groups and source/dest
// check to the Machine's instance in place, and moves it to the class (its
// class tag). A change an instance cannot take — another region, AMI,
// instance type, subnet or zone, key pair, instance profile, placement
// group, block devices or metadata options — is FailedPrecondition before
// anything is changed: the manager replaces the Machine instead. The
// capacity settings only apply to new instances and are not a change.
func (d *Driver) UpdateMachine(ctx context.Context, req *driver.UpdateMachineRequest) (*driver.UpdateMachineResponse, error) {
	m := req.Machine
	cl, err := d.beginMachine(ctx, req.MachineClass, req.Secret, m)
	if err != nil {
		return nil, err
	}
	var last *ProviderSpec
	if len(req.LastAppliedProviderSpec.Raw) > 0 {
		// A last-applied spec the driver cannot read is compared as
		// empty: every field then counts as changed where it matters.
		last = &ProviderSpec{}
		_ = json.Unmarshal(req.LastAppliedProviderSpec.Raw, last)
		if last.Region != "" && last.Region != cl.spec.Region {
			return nil, driver.Errorf(driver.FailedPrecondition, "providerSpec.region changed from %s to %s: an instance cannot move", last.Region, cl.spec.Region)
		}
	}
	id, err := ParseProviderID(req.ProviderID)
	if err != nil {
		return nil, invalid("providerID", "%v", err)
	}
	defer d.locks.lock(string(m.UID))()
	inst, err := d.byID(ctx, cl.ec2, id)
	if err != nil {
		return nil, err
	}
	if !live(inst) {
		return nil, driver.Errorf(driver.NotFound, "instance %s of Machine %s/%s is gone", id, m.Namespace, m.Name)
	}
	if err := d.claims(inst, m); err != nil {
		return nil, driver.Errorf(driver.InvalidArgument, "%s", driver.MessageOf(err))
	}
	if err := d.needsNewInstance(ctx, cl, inst, last); err != nil {
		return nil, err
	}
	if err := d.applyTags(ctx, cl, inst, last); err != nil {
		return nil, err
	}
	if err := applyGroups(ctx, cl, inst); err != nil {
		return nil, err
	}
	if needsInit(cl.spec, inst) && stateOf(inst) != string(types.InstanceStateNamePending) {
		_, err := cl.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id),
			SourceDestCheck: &types.AttributeBooleanValue{Value: cl.spec.SourceDestCheck}})
		if err != nil {
			return nil, ec2Error(ctx, err, "setting the source/dest check of instance %s", id)
		}
	}
	return &driver.UpdateMachineResponse{}, nil
}

// needsNewInstance is FailedPrecondition naming the first field the
// instance cannot take in place: compared with the instance itself where
// EC2 says (AMI, type, subnet, key, placement group), else with the spec
// the instance was last given.
func (d *Driver) needsNewInstance(ctx context.Context, cl *call, inst *types.Instance, last *ProviderSpec) error {
	s, id := cl.spec, aws.ToString(inst.InstanceId)
	replace := func(field, from, to string) error {
		return driver.Errorf(driver.FailedPrecondition, "providerSpec.%s changed from %q to %q: instance %s cannot take it in place; the Machine is replaced", field, from, to, id)
	}
	if have := aws.ToString(inst.ImageId); have != s.AMI {
		return replace("ami", have, s.AMI)
	}
	if have := string(inst.InstanceType); have != s.InstanceType {
		return replace("instanceType", have, s.InstanceType)
	}
	if err := d.checkSubnet(ctx, cl, inst); err != nil {
		return err
	}
	if have := aws.ToString(inst.KeyName); have != s.KeyName {
		return replace("keyName", have, s.KeyName)
	}
	group := ""
	if inst.Placement != nil {
		group = aws.ToString(inst.Placement.GroupName)
	}
	if group != s.PlacementGroup {
		return replace("placementGroup", group, s.PlacementGroup)
	}
	if last == nil {
		return nil
	}
	for _, f := range []struct {
		field     string
		was, want any
	}{
		{"iamInstanceProfile", last.IAMInstanceProfile, s.IAMInstanceProfile},
		{"blockDevices", last.BlockDevices, s.BlockDevices},
		{"metadataOptions", last.MetadataOptions, s.MetadataOptions},
	} {
		if !reflect.DeepEqual(f.was, f.want) {
			was, _ := json.Marshal(f.was)
			want, _ := json.Marshal(f.want)
			return replace(f.field, string(was), string(want))
		}
	}
	return nil
}

// checkSubnet is FailedPrecondition when the class would not launch the
// instance in its subnet any more.
func (d *Driver) checkSubnet(ctx context.Context, cl *call, inst *types.Instance) error {
	s, have := cl.spec, aws.ToString(inst.SubnetId)
	var ok bool
	switch {
	case len(s.Subnets) > 0:
		want, listed := s.Subnets[zoneOf(inst)]
		ok = listed && want == have
	case len(s.SubnetIDs) > 0:
		ok = slices.Contains(s.SubnetIDs, have)
	default:
		return nil
	}
	if !ok {
		return driver.Errorf(driver.FailedPrecondition, "providerSpec.subnets: instance %s is in subnet %s (zone %s), which the class no longer has for its zone; the Machine is replaced",
			aws.ToString(inst.InstanceId), have, zoneOf(inst))
	}
	return nil
}

// applyTags sets the class's tags and the class tag, and removes the tags
// the last-applied spec had and this one has not.
func (d *Driver) applyTags(ctx context.Context, cl *call, inst *types.Instance, last *ProviderSpec) error {
	have := tagMap(inst.Tags)
	want := map[string]string{TagClass: cl.class.Name}
	for k, v := range cl.spec.Tags {
		want[k] = v
	}
	set := map[string]string{}
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			set[k] = v
		}
	}
	var remove []types.Tag
	if last != nil {
		for _, k := range sortedKeys(last.Tags) {
			if _, keep := want[k]; !keep && !reservedTag(k) {
				if _, ok := have[k]; ok {
					remove = append(remove, types.Tag{Key: aws.String(k)})
				}
			}
		}
	}
	id := aws.ToString(inst.InstanceId)
	if len(set) > 0 {
		if _, err := cl.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2Tags(set)}); err != nil {
			return ec2Error(ctx, err, "tagging instance %s", id)
		}
	}
	if len(remove) > 0 {
		if _, err := cl.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{id}, Tags: remove}); err != nil {
			return ec2Error(ctx, err, "removing tags from instance %s", id)
		}
	}
	return nil
}

// applyGroups sets the class's security groups when they differ from the
// instance's; a class without groups leaves the instance's alone.
func applyGroups(ctx context.Context, cl *call, inst *types.Instance) error {
	want := cl.spec.SecurityGroupIDs
	if len(want) == 0 {
		return nil
	}
	var have []string
	for _, g := range inst.SecurityGroups {
		have = append(have, aws.ToString(g.GroupId))
	}
	a, b := slices.Clone(have), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	if slices.Equal(a, b) {
		return nil
	}
	id := aws.ToString(inst.InstanceId)
	if _, err := cl.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id), Groups: want}); err != nil {
		return ec2Error(ctx, err, "setting the security groups of instance %s", id)
	}
	return nil
}
