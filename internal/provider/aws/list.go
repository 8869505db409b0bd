package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// ListMachines lists the class's live instances in this cluster, each
// with the Machine UID and name its tags carry: the class is known by its
// name and namespace tags. Asked for a page (req.PageSize), it answers one
// DescribeInstances page, EC2's NextToken as the next page's token;
// otherwise every page.
func (d *Driver) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	cl, err := d.begin(ctx, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	filters := []types.Filter{tagFilter(ClusterTag(d.opts.ClusterName), clusterTagValue),
		tagFilter(TagClass, cl.class.Name), tagFilter(TagNamespace, cl.class.Namespace),
		filter("instance-state-name", liveStates...)}
	var insts []types.Instance
	out := &driver.ListMachinesResponse{}
	if req.PageSize > 0 {
		insts, out.NextPageToken, err = d.describePage(ctx, cl.ec2, req.PageSize, req.PageToken, filters)
	} else {
		insts, err = d.describe(ctx, cl.ec2, filters...)
	}
	if err != nil {
		return nil, ec2Error(ctx, err, "listing the instances of class %s/%s", cl.class.Namespace, cl.class.Name)
	}
	out.VMs = make([]driver.ListedVM, 0, len(insts))
	for i := range insts {
		tags := tagMap(insts[i].Tags)
		out.VMs = append(out.VMs, driver.ListedVM{ProviderID: providerIDOf(&insts[i]),
			MachineName: tags[TagMachineName], MachineUID: tags[TagMachineUID]})
	}
	return out, nil
}

// describePage lists one page of the instances the filters match: at most
// size (EC2 takes 5 to 1000), from token on ("": the first page), and the
// token of the next page ("" after the last).
func (d *Driver) describePage(ctx context.Context, c *ec2.Client, size int32, token string, filters []types.Filter) ([]types.Instance, string, error) {
	in := &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(min(max(size, 5), 1000))}
	if token != "" {
		in.NextToken = aws.String(token)
	}
	page, err := c.DescribeInstances(ctx, in)
	if err != nil {
		return nil, "", err
	}
	var out []types.Instance
	for _, r := range page.Reservations {
		out = append(out, r.Instances...)
	}
	return out, aws.ToString(page.NextToken), nil
}
