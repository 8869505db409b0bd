package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// maxTokenAttempts bounds the client tokens one create tries: each
// IdempotentInstanceTerminated moves to the next (docs/providers/aws.md,
// "Never two instances").
const maxTokenAttempts = 8

// CreateMachine returns the Machine's live instance, or launches it. The
// instance is looked up by the Machine's UID tag first; a launch carries a
// client token derived from the UID, so a launch EC2 already did (a call
// that timed out, a driver that restarted before the tag lookup sees the
// instance) returns that instance instead of a second one. Creates of one
// Machine are serialized in the driver. It returns as soon as EC2 has
// accepted the launch: the instance is pending, and the manager waits for
// its Node.
func (d *Driver) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	m := req.Machine
	cl, err := d.beginMachine(ctx, req.MachineClass, req.Secret, m)
	if err != nil {
		return nil, err
	}
	defer d.locks.lock(string(m.UID))()
	insts, err := d.liveOf(ctx, cl.ec2, string(m.UID))
	if err != nil {
		return nil, err
	}
	switch len(insts) {
	case 0:
	case 1:
		return createdResponse(&insts[0]), nil
	default:
		return nil, several(m, insts)
	}
	p, err := d.placement(ctx, cl, m)
	if err != nil {
		return nil, err
	}
	in, err := d.launchInput(ctx, cl, req, p)
	if err != nil {
		return nil, err
	}
	defer d.names.lock(m.Name)()
	node, err := d.nodeName(ctx, cl.ec2, m)
	if err != nil {
		return nil, err
	}
	inst, err := d.launch(ctx, cl, m, in, node, p)
	if err != nil {
		return nil, err
	}
	return createdResponse(inst), nil
}

func createdResponse(i *types.Instance) *driver.CreateMachineResponse {
	node := tagMap(i.Tags)[TagNodeName]
	return &driver.CreateMachineResponse{ProviderID: providerIDOf(i), NodeName: node, Addresses: addresses(i, node), NodeLabels: nodeLabels(i)}
}

// nodeLabels are the labels the manager puts on the instance's Machine and
// Node: its capacity type, when it can be told (see capacityTypeOf).
func nodeLabels(i *types.Instance) map[string]string {
	ct := capacityTypeOf(i)
	if ct == "" {
		return nil
	}
	return map[string]string{driver.CapacityTypeLabel: ct}
}

// capacityTypeOf says how the instance was bought: spot when EC2 says so
// (its InstanceLifecycle), else what the driver tagged at the launch,
// else on-demand for an instance with no lifecycle (EC2 leaves it out
// for on-demand ones). Another lifecycle (scheduled, capacity-block) with
// no tag is neither: "".
func capacityTypeOf(i *types.Instance) string {
	if i.InstanceLifecycle == types.InstanceLifecycleTypeSpot {
		return CapacitySpot
	}
	switch ct := tagMap(i.Tags)[TagCapacityType]; ct {
	case CapacitySpot, CapacityOnDemand:
		return ct
	}
	if i.InstanceLifecycle == "" {
		return CapacityOnDemand
	}
	return ""
}

// several is the answer for a Machine with more than one live instance:
// OutOfRange makes the manager collect orphans at once.
func several(m *v1alpha1.Machine, insts []types.Instance) error {
	ids := make([]string, len(insts))
	for i := range insts {
		ids[i] = aws.ToString(insts[i].InstanceId)
	}
	return driver.Errorf(driver.OutOfRange, "Machine %s/%s (UID %s) has %d live instances: %v", m.Namespace, m.Name, m.UID, len(insts), ids)
}

// launch runs the instance with each capacity type in turn: one refused
// for capacity (ResourceExhausted) hands over to the next, in the same
// zone; the last one's refusal is the answer, and the manager's zone
// fallback moves the Machine elsewhere.
func (d *Driver) launch(ctx context.Context, cl *call, m *v1alpha1.Machine, in *ec2.RunInstancesInput, node string, p placement) (*types.Instance, error) {
	cts := cl.spec.capacityTypes()
	var last error
	for n, ct := range cts {
		inst, err := d.runWithTokens(ctx, cl, m, d.withCapacityType(in, cl, ct, m, node), ct)
		if err == nil {
			d.opts.Logger.Info("launched an instance", "machine", m.Namespace+"/"+m.Name, "instance", aws.ToString(inst.InstanceId),
				"zone", zoneOf(inst), "capacityType", ct)
			return inst, nil
		}
		if driver.CodeOf(err) != driver.ResourceExhausted {
			return nil, err
		}
		last = err
		if n+1 < len(cts) {
			d.opts.Logger.Info("no capacity; trying the next capacity type", "machine", m.Namespace+"/"+m.Name,
				"zone", p.zone, "capacityType", ct, "next", cts[n+1], "err", driver.MessageOf(err))
		}
	}
	return nil, last
}

// runWithTokens runs the instance with the client token of each attempt
// in turn, moving to the next when EC2 says the token's instance was
// terminated (IdempotentInstanceTerminated): that instance is gone, and
// the Machine needs a new one.
func (d *Driver) runWithTokens(ctx context.Context, cl *call, m *v1alpha1.Machine, in *ec2.RunInstancesInput, ct string) (*types.Instance, error) {
	for attempt := range maxTokenAttempts {
		in.ClientToken = aws.String(ClientToken(string(m.UID), ct, attempt))
		out, err := cl.ec2.RunInstances(ctx, in)
		if apiCode(err) == "IdempotentInstanceTerminated" {
			continue
		}
		if err != nil {
			return nil, ec2Error(ctx, err, "launching %s %s instance of %s in %s", ct, cl.spec.InstanceType, cl.spec.AMI, placeName(in))
		}
		if len(out.Instances) != 1 {
			return nil, driver.Errorf(driver.Internal, "RunInstances returned %d instances, want 1", len(out.Instances))
		}
		return &out.Instances[0], nil
	}
	return nil, driver.Errorf(driver.FailedPrecondition, "the instances of the first %d client tokens of Machine UID %s were all terminated", maxTokenAttempts, m.UID)
}

// ClientToken is the RunInstances idempotency token of a Machine's
// attempt with a capacity type: the same for a repeated call, so EC2
// returns the instance it launched; another for the next attempt or
// capacity type (whose parameters differ). At most 64 ASCII characters.
func ClientToken(uid, capacityType string, attempt int) string {
	h := sha256.Sum256([]byte(uid))
	return fmt.Sprintf("mw-%s-%s-%d", hex.EncodeToString(h[:20]), capacityType, attempt)
}

func placeName(in *ec2.RunInstancesInput) string {
	switch {
	case aws.ToString(in.SubnetId) != "":
		return "subnet " + *in.SubnetId
	case in.Placement != nil && aws.ToString(in.Placement.AvailabilityZone) != "":
		return "zone " + *in.Placement.AvailabilityZone
	}
	return "the default subnet"
}
