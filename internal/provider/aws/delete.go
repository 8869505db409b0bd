package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// DeleteMachine terminates every live instance of the Machine: the one
// its providerID names and those its UID tag finds (a create that made a
// second one by mistake is undone with it). An instance already gone
// (terminated, shutting down, unknown to EC2) is done. It never
// terminates an instance that carries another Machine's UID or another
// cluster's tag: FailedPrecondition, before anything is terminated.
//
// A Machine without a UID is the orphan collector's, for an instance
// whose Machine is gone: its providerID names the instance, which must
// carry this cluster's tag and the Machine's namespace and name.
func (d *Driver) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	cl, err := d.begin(ctx, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	m := req.Machine
	if m == nil {
		return nil, invalid("machine", "must be given")
	}
	var ids []string
	if m.UID == "" {
		ids, err = d.orphanTarget(ctx, cl, m)
	} else {
		defer d.locks.lock(string(m.UID))()
		ids, err = d.machineTargets(ctx, cl, m)
	}
	if err != nil || len(ids) == 0 {
		return &driver.DeleteMachineResponse{}, err
	}
	// One call per instance: EC2 refuses a whole call for one unknown ID,
	// and an unknown ID is one that is already gone.
	for _, id := range ids {
		_, err = cl.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err != nil && apiCode(err) != "InvalidInstanceID.NotFound" {
			return nil, ec2Error(ctx, err, "terminating instance %s of Machine %s/%s", id, m.Namespace, m.Name)
		}
		d.opts.Logger.Info("terminated an instance", "machine", m.Namespace+"/"+m.Name, "instance", id)
	}
	return &driver.DeleteMachineResponse{}, nil
}

// machineTargets are the live instances of a Machine with a UID.
func (d *Driver) machineTargets(ctx context.Context, cl *call, m *v1alpha1.Machine) ([]string, error) {
	insts, err := d.liveOf(ctx, cl.ec2, string(m.UID))
	if err != nil {
		return nil, err
	}
	ids := instanceIDs(insts)
	if m.Spec.ProviderID == "" {
		return ids, nil
	}
	id, err := ParseProviderID(m.Spec.ProviderID)
	if err != nil {
		return nil, invalid("machine.spec.providerID", "%v", err)
	}
	for _, have := range ids {
		if have == id {
			return ids, nil
		}
	}
	inst, err := d.byID(ctx, cl.ec2, id)
	if err != nil || !live(inst) {
		return ids, err
	}
	if err := d.claims(inst, m); err != nil {
		return nil, err
	}
	return append(ids, id), nil
}

// orphanTarget is the instance the providerID of a Machine without a UID
// names, when it is live and was made for a Machine of that namespace
// and name in this cluster.
func (d *Driver) orphanTarget(ctx context.Context, cl *call, m *v1alpha1.Machine) ([]string, error) {
	if m.Spec.ProviderID == "" {
		return nil, invalid("machine", "needs metadata.uid or spec.providerID to find its instance")
	}
	id, err := ParseProviderID(m.Spec.ProviderID)
	if err != nil {
		return nil, invalid("machine.spec.providerID", "%v", err)
	}
	inst, err := d.byID(ctx, cl.ec2, id)
	if err != nil || !live(inst) {
		return nil, err
	}
	tags := tagMap(inst.Tags)
	if !d.ours(inst) || tags[TagMachineName] != m.Name || tags[TagNamespace] != cl.class.Namespace {
		return nil, driver.Errorf(driver.FailedPrecondition, "instance %s is not cluster %s's instance of Machine %s/%s (its tags: cluster %q, Machine %s/%s): left alone",
			id, d.opts.ClusterName, cl.class.Namespace, m.Name, tags[ClusterTag(d.opts.ClusterName)], tags[TagNamespace], tags[TagMachineName])
	}
	return []string{id}, nil
}

func instanceIDs(insts []types.Instance) []string {
	ids := make([]string, 0, len(insts))
	for _, i := range insts {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	return ids
}
