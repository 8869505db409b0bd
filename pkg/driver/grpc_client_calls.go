package driver

import (
	"context"
	"encoding/json"

	driverv1 "github.com/millwright-dev/millwright/api/driver/v1"
)

// CreateMachine implements Driver over gRPC.
func (c *Client) CreateMachine(ctx context.Context, req *CreateMachineRequest) (*CreateMachineResponse, error) {
	o, err := encodeObjects(req.Machine, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.begin(ctx)
	defer cancel()
	r, err := c.rpc.CreateMachine(ctx, &driverv1.CreateMachineRequest{Machine: o.machine, MachineClass: o.class, Secret: o.secret})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &CreateMachineResponse{
		ProviderID:     r.GetProviderId(),
		NodeName:       r.GetNodeName(),
		LastKnownState: r.GetLastKnownState(),
		Addresses:      addressesFromWire(r.GetAddresses()),
		NodeLabels:     labelsFromWire(r.GetNodeLabels()),
	}, nil
}

// InitializeMachine implements Driver over gRPC.
func (c *Client) InitializeMachine(ctx context.Context, req *InitializeMachineRequest) (*InitializeMachineResponse, error) {
	o, err := encodeObjects(req.Machine, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.begin(ctx)
	defer cancel()
	r, err := c.rpc.InitializeMachine(ctx, &driverv1.InitializeMachineRequest{Machine: o.machine, MachineClass: o.class, Secret: o.secret})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &InitializeMachineResponse{ProviderID: r.GetProviderId(), NodeName: r.GetNodeName()}, nil
}

// DeleteMachine implements Driver over gRPC.
func (c *Client) DeleteMachine(ctx context.Context, req *DeleteMachineRequest) (*DeleteMachineResponse, error) {
	o, err := encodeObjects(req.Machine, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.begin(ctx)
	defer cancel()
	r, err := c.rpc.DeleteMachine(ctx, &driverv1.DeleteMachineRequest{Machine: o.machine, MachineClass: o.class, Secret: o.secret})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &DeleteMachineResponse{LastKnownState: r.GetLastKnownState()}, nil
}

// GetMachineStatus implements Driver over gRPC.
func (c *Client) GetMachineStatus(ctx context.Context, req *GetMachineStatusRequest) (*GetMachineStatusResponse, error) {
	o, err := encodeObjects(req.Machine, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.begin(ctx)
	defer cancel()
	r, err := c.rpc.GetMachineStatus(ctx, &driverv1.GetMachineStatusRequest{Machine: o.machine, MachineClass: o.class, Secret: o.secret})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &GetMachineStatusResponse{
		ProviderID: r.GetProviderId(),
		NodeName:   r.GetNodeName(),
		Addresses:  addressesFromWire(r.GetAddresses()),
		Progress:   r.GetProgress(),
		NodeLabels: labelsFromWire(r.GetNodeLabels()),
	}, nil
}

// ListMachines implements Driver over gRPC.
func (c *Client) ListMachines(ctx context.Context, req *ListMachinesRequest) (*ListMachinesResponse, error) {
	o, err := encodeObjects(nil, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.begin(ctx)
	defer cancel()
	r, err := c.rpc.ListMachines(ctx, &driverv1.ListMachinesRequest{MachineClass: o.class, Secret: o.secret,
		PageSize: req.PageSize, PageToken: req.PageToken})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &ListMachinesResponse{VMs: listedFromWire(r.GetVms()), NextPageToken: r.GetNextPageToken()}, nil
}

// GetVolumeIDs implements Driver over gRPC.
func (c *Client) GetVolumeIDs(ctx context.Context, req *GetVolumeIDsRequest) (*GetVolumeIDsResponse, error) {
	specs, err := encodePVSpecs(req.PVSpecs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.begin(ctx)
	defer cancel()
	r, err := c.rpc.GetVolumeIDs(ctx, &driverv1.GetVolumeIDsRequest{PvSpecs: specs})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &GetVolumeIDsResponse{VolumeIDs: r.GetVolumeIds()}, nil
}

// UpdateMachine implements Driver over gRPC.
func (c *Client) UpdateMachine(ctx context.Context, req *UpdateMachineRequest) (*UpdateMachineResponse, error) {
	o, err := encodeObjects(req.Machine, req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	// A RawExtension built in Go may hold an Object instead of Raw bytes;
	// the wire carries JSON either way.
	spec := req.LastAppliedProviderSpec.Raw
	if spec == nil && req.LastAppliedProviderSpec.Object != nil {
		if spec, err = json.Marshal(req.LastAppliedProviderSpec.Object); err != nil {
			return nil, Errorf(Internal, "encoding lastAppliedProviderSpec: %v", err)
		}
	}
	ctx, cancel := c.begin(ctx)
	defer cancel()
	_, err = c.rpc.UpdateMachine(ctx, &driverv1.UpdateMachineRequest{
		Machine:                 o.machine,
		ProviderId:              req.ProviderID,
		LastAppliedProviderSpec: spec,
		MachineClass:            o.class,
		Secret:                  o.secret,
	})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &UpdateMachineResponse{}, nil
}

// GetPluginInfo implements Driver over gRPC. req may be nil.
func (c *Client) GetPluginInfo(ctx context.Context, _ *GetPluginInfoRequest) (*GetPluginInfoResponse, error) {
	ctx, cancel := c.begin(ctx)
	defer cancel()
	r, err := c.rpc.GetPluginInfo(ctx, &driverv1.GetPluginInfoRequest{})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &GetPluginInfoResponse{Name: r.GetName(), Version: r.GetVersion(), Implements: methodsFromWire(r.GetImplements())}, nil
}
