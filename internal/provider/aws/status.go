package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// GetMachineStatus reports the Machine's live instance (see find): by its
// providerID when it records one (one DescribeInstances by instance ID),
// else by its UID tag. A terminated or shutting-down instance is none;
// Uninitialized when the class asks for a source/dest check the instance
// does not have yet.
func (d *Driver) GetMachineStatus(ctx context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	m := req.Machine
	cl, err := d.beginMachine(ctx, req.MachineClass, req.Secret, m)
	if err != nil {
		return nil, err
	}
	inst, err := d.find(ctx, cl, m)
	if err != nil {
		return nil, err
	}
	if needsInit(cl.spec, inst) {
		return nil, driver.Errorf(driver.Uninitialized, "instance %s: the source/dest check is to be %t", aws.ToString(inst.InstanceId), *cl.spec.SourceDestCheck)
	}
	tags := tagMap(inst.Tags)
	node := tags[TagNodeName]
	return &driver.GetMachineStatusResponse{ProviderID: providerIDOf(inst), NodeName: node, Addresses: addresses(inst, node),
		Progress:   fmt.Sprintf("%s instance %s is %s in %s", tags[TagCapacityType], aws.ToString(inst.InstanceId), stateOf(inst), zoneOf(inst)),
		NodeLabels: nodeLabels(inst)}, nil
}

// find returns the Machine's one live instance: the one its providerID
// names when it records one (NotFound when that one is gone, whatever else
// carries its UID), else the one its UID tag finds (NotFound when there is
// none, OutOfRange when there are several). FailedPrecondition when the
// providerID names an instance of another Machine or cluster.
func (d *Driver) find(ctx context.Context, cl *call, m *v1alpha1.Machine) (*types.Instance, error) {
	if m.Spec.ProviderID != "" {
		id, err := ParseProviderID(m.Spec.ProviderID)
		if err != nil {
			return nil, invalid("machine.spec.providerID", "%v", err)
		}
		inst, err := d.byID(ctx, cl.ec2, id)
		if err != nil {
			return nil, err
		}
		if !live(inst) {
			// The recorded instance is gone: the Machine's VM is lost,
			// whatever else carries its UID (a duplicate is the orphan
			// collection's, and must not pass for this Machine's VM).
			return nil, driver.Errorf(driver.NotFound, "instance %s of Machine %s/%s is gone", id, m.Namespace, m.Name)
		}
		if err := d.claims(inst, m); err != nil {
			return nil, err
		}
		return inst, nil
	}
	insts, err := d.liveOf(ctx, cl.ec2, string(m.UID))
	if err != nil {
		return nil, err
	}
	switch len(insts) {
	case 0:
		return nil, driver.Errorf(driver.NotFound, "Machine %s/%s (UID %s) has no live instance in %s", m.Namespace, m.Name, m.UID, cl.spec.Region)
	case 1:
		return &insts[0], nil
	}
	return nil, several(m, insts)
}

// claims checks that an instance found by a Machine's providerID is that
// Machine's: this cluster's, and tagged with the Machine's UID.
func (d *Driver) claims(inst *types.Instance, m *v1alpha1.Machine) error {
	tags := tagMap(inst.Tags)
	switch {
	case !d.ours(inst):
		return driver.Errorf(driver.FailedPrecondition, "instance %s does not carry cluster %s's tag %s: it is not this cluster's and is left alone",
			aws.ToString(inst.InstanceId), d.opts.ClusterName, ClusterTag(d.opts.ClusterName))
	case tags[TagMachineUID] != string(m.UID):
		return driver.Errorf(driver.FailedPrecondition, "instance %s was made for Machine %s/%s (UID %s), not %s/%s (UID %s): left alone",
			aws.ToString(inst.InstanceId), tags[TagNamespace], tags[TagMachineName], tags[TagMachineUID], m.Namespace, m.Name, m.UID)
	}
	return nil
}

// needsInit reports whether the class asks for a source/dest check the
// instance does not have.
func needsInit(s *ProviderSpec, inst *types.Instance) bool {
	return s.SourceDestCheck != nil && aws.ToBool(inst.SourceDestCheck) != *s.SourceDestCheck
}
