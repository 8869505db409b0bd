package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// InitializeMachine applies the class's sourceDestCheck to the Machine's
// instance once it is no longer pending (EC2 refuses it before):
// Uninitialized asks to be called again meanwhile. A class without
// sourceDestCheck has nothing to initialize: OK at once. It is listed as
// implemented for every class because GetPluginInfo cannot depend on one.
func (d *Driver) InitializeMachine(ctx context.Context, req *driver.InitializeMachineRequest) (*driver.InitializeMachineResponse, error) {
	m := req.Machine
	cl, err := d.beginMachine(ctx, req.MachineClass, req.Secret, m)
	if err != nil {
		return nil, err
	}
	inst, err := d.find(ctx, cl, m)
	if err != nil {
		return nil, err
	}
	resp := &driver.InitializeMachineResponse{ProviderID: providerIDOf(inst), NodeName: tagMap(inst.Tags)[TagNodeName]}
	if !needsInit(cl.spec, inst) {
		return resp, nil
	}
	id := aws.ToString(inst.InstanceId)
	if stateOf(inst) == string(types.InstanceStateNamePending) {
		return nil, driver.Errorf(driver.Uninitialized, "instance %s is pending; its source/dest check is set once it runs", id)
	}
	_, err = cl.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id),
		SourceDestCheck: &types.AttributeBooleanValue{Value: cl.spec.SourceDestCheck}})
	if err != nil {
		return nil, ec2Error(ctx, err, "setting the source/dest check of instance %s", id)
	}
	return resp, nil
}
