package aws

import (
	"context"
	"strings"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// EBSCSIDriver is the EBS CSI driver's name.
const EBSCSIDriver = "ebs.csi.aws.com"

// GetVolumeIDs maps EBS volumes to their IDs: an EBS CSI volume's handle,
// and an in-tree awsElasticBlockStore volume's ID, which Kubernetes
// writes aws://ZONE/vol-... or vol-.... Other volumes are left out.
func (d *Driver) GetVolumeIDs(ctx context.Context, req *driver.GetVolumeIDsRequest) (*driver.GetVolumeIDsResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &driver.GetVolumeIDsResponse{}
	for _, pv := range req.PVSpecs {
		if pv == nil {
			continue
		}
		var id string
		switch {
		case pv.CSI != nil && pv.CSI.Driver == EBSCSIDriver:
			id = pv.CSI.VolumeHandle
		case pv.AWSElasticBlockStore != nil:
			id = VolumeID(pv.AWSElasticBlockStore.VolumeID)
		}
		if strings.HasPrefix(id, "vol-") {
			out.VolumeIDs = append(out.VolumeIDs, id)
		}
	}
	return out, nil
}

// VolumeID is the vol-... ID of an in-tree EBS volume ID: aws://ZONE/vol-...,
// aws:///vol-... or vol-....
func VolumeID(s string) string {
	if rest, ok := strings.CutPrefix(s, "aws://"); ok {
		s = rest[strings.LastIndex(rest, "/")+1:]
	}
	return s
}
