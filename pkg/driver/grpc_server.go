package driver

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	driverv1 "github.com/millwright-dev/millwright/api/driver/v1"
)

// maxMessageSize bounds one request or response, both ways. gRPC's default
// of 4 MiB is too tight for ListMachines of a big fleet, and a Secret alone
// may be 1 MiB; 64 MiB still stops a runaway message.
const maxMessageSize = 64 << 20

// NewGRPCServer returns a gRPC server that serves d with the driver plugin
// protocol (api/driver/v1) and reports SERVING on the standard health
// service. The caller runs it with Serve on a listener and stops it; most
// plugins call Serve or ServeEndpoint instead, which do both.
func NewGRPCServer(d Driver, opts ...grpc.ServerOption) *grpc.Server {
	s, _, _ := newGRPCServer(d, opts...)
	return s
}

// newGRPCServer also returns the health server, so ServeEndpoint can report
// NOT_SERVING while it drains, and stopping, which ends the ReceiveEvents
// long polls in flight: a graceful stop waits for every call, and a poll
// would hold it for its whole wait.
func newGRPCServer(d Driver, opts ...grpc.ServerOption) (srv *grpc.Server, h *health.Server, stopping func()) {
	opts = append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
		grpc.ChainUnaryInterceptor(recoverPanics),
	}, opts...)
	srv = grpc.NewServer(opts...)
	gs := &grpcServer{d: d, stop: make(chan struct{})}
	driverv1.RegisterDriverServer(srv, gs)
	h = health.NewServer()
	h.SetServingStatus(driverv1.Driver_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, h) // "" (the whole server) is SERVING by default
	var once sync.Once
	return srv, h, func() { once.Do(func() { close(gs.stop) }) }
}

// recoverPanics answers Internal to a call whose driver panicked, instead of
// letting one bad call kill the plugin and every call in flight with it.
// The stack goes to the plugin's log, not into the Machine's status.
func recoverPanics(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("driver panicked", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			err = toStatus(Errorf(Internal, "driver panicked in %s: %v", info.FullMethod, r))
		}
	}()
	return handler(ctx, req)
}

// grpcServer adapts a Driver to the generated service interface: it decodes
// the Kubernetes JSON of requests, calls the driver, and sends its machine
// error code as the status code.
type grpcServer struct {
	driverv1.UnimplementedDriverServer
	d Driver
	// stop is closed when the server starts to stop (newGRPCServer).
	stop chan struct{}
}

var _ driverv1.DriverServer = (*grpcServer)(nil)

// respond converts a driver's answer. A nil response with a nil error is
// answered as the zero response: in-process that is what a caller reading
// its fields would see too.
func respond[R, W any](resp *R, err error, wire func(*R) *W) (*W, error) {
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		resp = new(R)
	}
	return wire(resp), nil
}

func (s *grpcServer) CreateMachine(ctx context.Context, in *driverv1.CreateMachineRequest) (*driverv1.CreateMachineResponse, error) {
	m, c, sec, err := objects{in.GetMachine(), in.GetMachineClass(), in.GetSecret()}.decode()
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := s.d.CreateMachine(ctx, &CreateMachineRequest{Machine: m, MachineClass: c, Secret: sec})
	return respond(resp, err, func(r *CreateMachineResponse) *driverv1.CreateMachineResponse {
		return &driverv1.CreateMachineResponse{
			ProviderId:     r.ProviderID,
			NodeName:       r.NodeName,
			LastKnownState: r.LastKnownState,
			Addresses:      addressesToWire(r.Addresses),
			NodeLabels:     labelsToWire(r.NodeLabels),
		}
	})
}

func (s *grpcServer) InitializeMachine(ctx context.Context, in *driverv1.InitializeMachineRequest) (*driverv1.InitializeMachineResponse, error) {
	m, c, sec, err := objects{in.GetMachine(), in.GetMachineClass(), in.GetSecret()}.decode()
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := s.d.InitializeMachine(ctx, &InitializeMachineRequest{Machine: m, MachineClass: c, Secret: sec})
	return respond(resp, err, func(r *InitializeMachineResponse) *driverv1.InitializeMachineResponse {
		return &driverv1.InitializeMachineResponse{ProviderId: r.ProviderID, NodeName: r.NodeName}
	})
}

func (s *grpcServer) DeleteMachine(ctx context.Context, in *driverv1.DeleteMachineRequest) (*driverv1.DeleteMachineResponse, error) {
	m, c, sec, err := objects{in.GetMachine(), in.GetMachineClass(), in.GetSecret()}.decode()
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := s.d.DeleteMachine(ctx, &DeleteMachineRequest{Machine: m, MachineClass: c, Secret: sec})
	return respond(resp, err, func(r *DeleteMachineResponse) *driverv1.DeleteMachineResponse {
		return &driverv1.DeleteMachineResponse{LastKnownState: r.LastKnownState}
	})
}

func (s *grpcServer) GetMachineStatus(ctx context.Context, in *driverv1.GetMachineStatusRequest) (*driverv1.GetMachineStatusResponse, error) {
	m, c, sec, err := objects{in.GetMachine(), in.GetMachineClass(), in.GetSecret()}.decode()
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := s.d.GetMachineStatus(ctx, &GetMachineStatusRequest{Machine: m, MachineClass: c, Secret: sec})
	return respond(resp, err, func(r *GetMachineStatusResponse) *driverv1.GetMachineStatusResponse {
		return &driverv1.GetMachineStatusResponse{
			ProviderId: r.ProviderID,
			NodeName:   r.NodeName,
			Addresses:  addressesToWire(r.Addresses),
			Progress:   text(r.Progress),
			NodeLabels: labelsToWire(r.NodeLabels),
		}
	})
}

func (s *grpcServer) ListMachines(ctx context.Context, in *driverv1.ListMachinesRequest) (*driverv1.ListMachinesResponse, error) {
	_, c, sec, err := objects{class: in.GetMachineClass(), secret: in.GetSecret()}.decode()
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := s.d.ListMachines(ctx, &ListMachinesRequest{MachineClass: c, Secret: sec,
		PageSize: in.GetPageSize(), PageToken: in.GetPageToken()})
	return respond(resp, err, func(r *ListMachinesResponse) *driverv1.ListMachinesResponse {
		return &driverv1.ListMachinesResponse{Vms: listedToWire(r.VMs), NextPageToken: r.NextPageToken}
	})
}

func (s *grpcServer) GetVolumeIDs(ctx context.Context, in *driverv1.GetVolumeIDsRequest) (*driverv1.GetVolumeIDsResponse, error) {
	specs, err := decodePVSpecs(in.GetPvSpecs())
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := s.d.GetVolumeIDs(ctx, &GetVolumeIDsRequest{PVSpecs: specs})
	return respond(resp, err, func(r *GetVolumeIDsResponse) *driverv1.GetVolumeIDsResponse {
		return &driverv1.GetVolumeIDsResponse{VolumeIds: r.VolumeIDs}
	})
}

func (s *grpcServer) UpdateMachine(ctx context.Context, in *driverv1.UpdateMachineRequest) (*driverv1.UpdateMachineResponse, error) {
	m, c, sec, err := objects{in.GetMachine(), in.GetMachineClass(), in.GetSecret()}.decode()
	if err != nil {
		return nil, toStatus(err)
	}
	req := &UpdateMachineRequest{Machine: m, ProviderID: in.GetProviderId(), MachineClass: c, Secret: sec}
	req.LastAppliedProviderSpec.Raw = in.GetLastAppliedProviderSpec()
	resp, err := s.d.UpdateMachine(ctx, req)
	return respond(resp, err, func(*UpdateMachineResponse) *driverv1.UpdateMachineResponse {
		return &driverv1.UpdateMachineResponse{}
	})
}

func (s *grpcServer) GetPluginInfo(ctx context.Context, _ *driverv1.GetPluginInfoRequest) (*driverv1.GetPluginInfoResponse, error) {
	resp, err := s.d.GetPluginInfo(ctx, &GetPluginInfoRequest{})
	return respond(resp, err, func(r *GetPluginInfoResponse) *driverv1.GetPluginInfoResponse {
		return &driverv1.GetPluginInfoResponse{Name: r.Name, Version: r.Version, Implements: methodsToWire(r.Implements)}
	})
}
