package aws

import (
	"context"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// ListMachines lists the class's live instances in this cluster, page by
// page, each with the Machine UID and name its tags carry: the class is
// known by its name and namespace tags.
func (d *Driver) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	cl, err := d.begin(ctx, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	insts, err := d.describe(ctx, cl.ec2, tagFilter(ClusterTag(d.opts.ClusterName), clusterTagValue),
		tagFilter(TagClass, cl.class.Name), tagFilter(TagNamespace, cl.class.Namespace),
		filter("instance-state-name", liveStates...))
	if err != nil {
		return nil, ec2Error(ctx, err, "listing the instances of class %s/%s", cl.class.Namespace, cl.class.Name)
	}
	out := &driver.ListMachinesResponse{VMs: make([]driver.ListedVM, 0, len(insts))}
	for i := range insts {
		tags := tagMap(insts[i].Tags)
		out.VMs = append(out.VMs, driver.ListedVM{ProviderID: providerIDOf(&insts[i]),
			MachineName: tags[TagMachineName], MachineUID: tags[TagMachineUID]})
	}
	return out, nil
}
