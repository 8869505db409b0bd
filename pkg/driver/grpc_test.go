package driver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	driverv1 "github.com/millwright-dev/millwright/api/driver/v1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestEveryMethodRoundTrips sends each method's request through the client
// and a real unix socket and checks that the driver received exactly that
// request, typed objects included, and the caller exactly its response.
func TestEveryMethodRoundTrips(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	servePlugin(t, path, fake)
	c := dial(t, path)
	ctx := context.Background()
	m, class, secret := testMachine("workers-7d9f-x2k4p"), testClass(), testSecret()
	addrs := []v1alpha1.MachineAddress{{Type: v1alpha1.MachineInternalIP, Address: "10.0.3.17"}, {Type: v1alpha1.MachineExternalDNS, Address: "w.example.com"}}

	cases := []struct {
		method    driver.Method
		req, resp any
		call      func() (any, error)
	}{
		{
			method: driver.MethodCreateMachine,
			req:    &driver.CreateMachineRequest{Machine: m, MachineClass: class, Secret: secret},
			resp: &driver.CreateMachineResponse{ProviderID: "sim://zone-a/vm-1", NodeName: "node-1", LastKnownState: "created", Addresses: addrs,
				NodeLabels: map[string]string{driver.CapacityTypeLabel: driver.CapacityTypeSpot, "node.millwright.dev/pool": "gpu"}},
		},
		{
			method: driver.MethodInitializeMachine,
			req:    &driver.InitializeMachineRequest{Machine: m, MachineClass: class, Secret: secret},
			resp:   &driver.InitializeMachineResponse{ProviderID: "sim://zone-a/vm-1", NodeName: "node-1"},
		},
		{
			method: driver.MethodDeleteMachine,
			req:    &driver.DeleteMachineRequest{Machine: m, MachineClass: class, Secret: nil},
			resp:   &driver.DeleteMachineResponse{LastKnownState: "deleting: step 2 of 3"},
		},
		{
			method: driver.MethodGetMachineStatus,
			req:    &driver.GetMachineStatusRequest{Machine: m, MachineClass: class, Secret: secret},
			resp: &driver.GetMachineStatusResponse{ProviderID: "sim://zone-a/vm-1", NodeName: "node-1", Addresses: addrs, Progress: "agent: connection refused",
				NodeLabels: map[string]string{driver.CapacityTypeLabel: driver.CapacityTypeOnDemand}},
		},
		{
			method: driver.MethodListMachines,
			req:    &driver.ListMachinesRequest{MachineClass: class, Secret: secret, PageSize: 2, PageToken: "sim://zone-a/vm-0"},
			resp: &driver.ListMachinesResponse{VMs: []driver.ListedVM{
				{ProviderID: "sim://zone-a/vm-1", MachineName: "m-1", MachineUID: "uid-1"},
				{ProviderID: "sim://zone-b/vm-2", MachineName: "m-2"},
			}, NextPageToken: "sim://zone-b/vm-2"},
		},
		{
			method: driver.MethodGetVolumeIDs,
			req:    &driver.GetVolumeIDsRequest{PVSpecs: []*corev1.PersistentVolumeSpec{testPVSpec(1), nil, testPVSpec(3)}},
			resp:   &driver.GetVolumeIDsResponse{VolumeIDs: []string{"vol-001", "vol-003"}},
		},
		{
			method: driver.MethodUpdateMachine,
			req: &driver.UpdateMachineRequest{
				Machine: m, ProviderID: "sim://zone-a/vm-1", MachineClass: class, Secret: secret,
				LastAppliedProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"large","tags":{"team":"platform"}}`)},
			},
			resp: &driver.UpdateMachineResponse{},
		},
		{
			method: driver.MethodReceiveEvents,
			req:    &driver.ReceiveEventsRequest{Acknowledged: []string{"ev-1", "ev-2"}, Wait: 1500 * time.Millisecond},
			resp: &driver.ReceiveEventsResponse{Events: []driver.VMEvent{
				{ID: "ev-3", ProviderID: "sim://zone-a/vm-1", MachineUID: "uid-1", Kind: driver.VMInterruption,
					Time: time.UnixMilli(1764650000123).UTC(), Deadline: time.UnixMilli(1764650120123).UTC(), Message: "spot interruption: terminate"},
				{ID: "ev-4", ProviderID: "sim://zone-b/vm-2", Kind: driver.VMRebalanceRecommendation, Time: time.UnixMilli(1764650000000).UTC()},
			}},
		},
		{
			method: driver.MethodGetPluginInfo,
			req:    &driver.GetPluginInfoRequest{},
			resp: &driver.GetPluginInfoResponse{Name: "fake", Version: "v1.2.3",
				Implements: []driver.Method{driver.MethodGetMachineStatus, driver.MethodListMachines}},
		},
	}
	// Events carry times, which Semantic cannot compare field by field.
	semantic := equality.Semantic.Copy()
	if err := semantic.AddFunc(func(a, b time.Time) bool { return a.Equal(b) }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(string(tc.method), func(t *testing.T) {
			fake.setResponse(tc.method, tc.resp)
			got, err := invoke(ctx, c, tc.method, tc.req)
			if err != nil {
				t.Fatalf("%s: %v", tc.method, err)
			}
			if !semantic.DeepEqual(fake.request(tc.method), tc.req) {
				t.Errorf("the driver received\n%#v\nwant\n%#v", fake.request(tc.method), tc.req)
			}
			if !semantic.DeepEqual(got, tc.resp) {
				t.Errorf("the caller received\n%#v\nwant\n%#v", got, tc.resp)
			}
		})
	}
}

// invoke calls method on d with req.
func invoke(ctx context.Context, d driver.Driver, method driver.Method, req any) (any, error) {
	switch method {
	case driver.MethodCreateMachine:
		return d.CreateMachine(ctx, req.(*driver.CreateMachineRequest))
	case driver.MethodInitializeMachine:
		return d.InitializeMachine(ctx, req.(*driver.InitializeMachineRequest))
	case driver.MethodDeleteMachine:
		return d.DeleteMachine(ctx, req.(*driver.DeleteMachineRequest))
	case driver.MethodGetMachineStatus:
		return d.GetMachineStatus(ctx, req.(*driver.GetMachineStatusRequest))
	case driver.MethodListMachines:
		return d.ListMachines(ctx, req.(*driver.ListMachinesRequest))
	case driver.MethodGetVolumeIDs:
		return d.GetVolumeIDs(ctx, req.(*driver.GetVolumeIDsRequest))
	case driver.MethodUpdateMachine:
		return d.UpdateMachine(ctx, req.(*driver.UpdateMachineRequest))
	case driver.MethodGetPluginInfo:
		return d.GetPluginInfo(ctx, req.(*driver.GetPluginInfoRequest))
	case driver.MethodReceiveEvents:
		return d.ReceiveEvents(ctx, req.(*driver.ReceiveEventsRequest))
	}
	panic("unknown method " + method)
}

// TestObjectsGetTheirKindOnTheWire: typed clients return objects without
// apiVersion and kind; the plugin gets them set, and the caller's object is
// left as it was.
func TestObjectsGetTheirKindOnTheWire(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	servePlugin(t, path, fake)
	c := dial(t, path)
	m, class, secret := testMachine("m-1"), testClass(), testSecret()
	m.TypeMeta, class.TypeMeta, secret.TypeMeta = v1alpha1.Machine{}.TypeMeta, v1alpha1.MachineClass{}.TypeMeta, corev1.Secret{}.TypeMeta

	if _, err := c.GetMachineStatus(context.Background(), &driver.GetMachineStatusRequest{Machine: m, MachineClass: class, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	got := fake.request(driver.MethodGetMachineStatus).(*driver.GetMachineStatusRequest)
	for _, tc := range []struct{ gotAPIVersion, gotKind, apiVersion, kind string }{
		{got.Machine.APIVersion, got.Machine.Kind, "machine.millwright.dev/v1alpha1", "Machine"},
		{got.MachineClass.APIVersion, got.MachineClass.Kind, "machine.millwright.dev/v1alpha1", "MachineClass"},
		{got.Secret.APIVersion, got.Secret.Kind, "v1", "Secret"},
	} {
		if tc.gotAPIVersion != tc.apiVersion || tc.gotKind != tc.kind {
			t.Errorf("the plugin got apiVersion %q kind %q, want %q %q", tc.gotAPIVersion, tc.gotKind, tc.apiVersion, tc.kind)
		}
	}
	if m.Kind != "" || class.Kind != "" || secret.Kind != "" {
		t.Errorf("the caller's objects were modified: kinds %q %q %q", m.Kind, class.Kind, secret.Kind)
	}
	got.Machine.TypeMeta = m.TypeMeta
	if !equality.Semantic.DeepEqual(got.Machine, m) {
		t.Errorf("the Machine changed on the way beyond its kind:\n%#v\nwant\n%#v", got.Machine, m)
	}
}

// TestEveryCodeArrivesUnchanged: each machine error code, 17 (not a gRPC
// code) included, and its message reach the caller as the driver returned
// them, exactly as CodeOf and MessageOf would read them in-process.
func TestEveryCodeArrivesUnchanged(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	servePlugin(t, path, fake)
	c := dial(t, path)
	for code := driver.OK; code <= driver.Uninitialized; code++ {
		var driverErr error
		if code != driver.OK {
			driverErr = driver.Errorf(code, "VM m-%d: %s happened — ünïcode, a newline\nand 100%% of a %%v", code, code)
		}
		fake.setHandle(func(context.Context, driver.Method, any) (any, error) {
			if driverErr != nil {
				return nil, driverErr
			}
			return &driver.GetMachineStatusResponse{ProviderID: "p"}, nil
		})
		_, err := c.GetMachineStatus(context.Background(), &driver.GetMachineStatusRequest{Machine: testMachine("m")})
		if got, want := driver.CodeOf(err), driver.CodeOf(driverErr); got != want {
			t.Errorf("code %d: the caller got code %v (%v), want %v", code, got, err, want)
		}
		if got, want := driver.MessageOf(err), driver.MessageOf(driverErr); got != want {
			t.Errorf("code %d: the caller got message %q, want %q", code, got, want)
		}
		var e *driver.Error
		if code != driver.OK && !errors.As(err, &e) {
			t.Errorf("code %d: the caller got a %T, want a *driver.Error", code, err)
		}
	}
}

// TestOtherDriverErrorsKeepTheirMeaning: errors that are not *driver.Error
// mean over gRPC what they mean in-process, and a driver bug (an error with
// code OK, a panic) is still a failure for the caller.
func TestOtherDriverErrorsKeepTheirMeaning(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	servePlugin(t, path, fake)
	c := dial(t, path)
	for _, tc := range []struct {
		name     string
		driver   func() error
		code     driver.Code
		contains string
	}{
		{"plain", func() error { return errors.New("boom") }, driver.Unknown, "boom"},
		{"wrapped", func() error { return fmt.Errorf("creating: %w", driver.Errorf(driver.ResourceExhausted, "quota")) }, driver.ResourceExhausted, "quota"},
		{"context", func() error { return fmt.Errorf("cloud call: %w", context.DeadlineExceeded) }, driver.DeadlineExceeded, "cloud call"},
		{"code OK", func() error { return driver.Errorf(driver.OK, "half done") }, driver.Unknown, "half done"},
		{"panic", func() error { panic("nil map") }, driver.Internal, "nil map"},
	} {
		fake.setHandle(func(context.Context, driver.Method, any) (any, error) { return nil, tc.driver() })
		_, err := c.DeleteMachine(context.Background(), &driver.DeleteMachineRequest{Machine: testMachine("m")})
		if driver.CodeOf(err) != tc.code || !strings.Contains(driver.MessageOf(err), tc.contains) {
			t.Errorf("%s: the caller got %v, want code %v with %q", tc.name, err, tc.code, tc.contains)
		}
	}
	// The plugin survived the panic.
	fake.setHandle(newFake("after-panic").handle)
	if info, err := c.GetPluginInfo(context.Background(), nil); err != nil || info.Name != "after-panic" {
		t.Errorf("after a panic: GetPluginInfo = %v, %v", info, err)
	}
}

// TestNilResponseIsZeroResponse: a driver that returns neither response nor
// error (UpdateMachine has nothing to say) gives the caller a zero response.
func TestNilResponseIsZeroResponse(t *testing.T) {
	path := socketPath(t)
	servePlugin(t, path, newFake("fake")) // no responses set: every method answers nil, nil
	c := dial(t, path)
	resp, err := c.UpdateMachine(context.Background(), &driver.UpdateMachineRequest{Machine: testMachine("m")})
	if err != nil || resp == nil {
		t.Fatalf("UpdateMachine = %v, %v; want an empty response", resp, err)
	}
	list, err := c.ListMachines(context.Background(), &driver.ListMachinesRequest{MachineClass: testClass()})
	if err != nil || list == nil || len(list.VMs) != 0 {
		t.Fatalf("ListMachines = %v, %v; want an empty list", list, err)
	}
}

// TestMalformedObjectIsInvalidArgument speaks the protocol directly, as a
// client in another language might, and sends JSON that is not a Machine.
func TestMalformedObjectIsInvalidArgument(t *testing.T) {
	path := socketPath(t)
	fake := newFake("fake")
	servePlugin(t, path, fake)
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = driverv1.NewDriverClient(conn).CreateMachine(context.Background(),
		&driverv1.CreateMachineRequest{Machine: []byte(`{"metadata":{"name":42}}`)}, grpc.WaitForReady(true))
	if st := status.Convert(err); driver.Code(st.Code()) != driver.InvalidArgument || !strings.Contains(st.Message(), "machine") {
		t.Errorf("CreateMachine with a malformed Machine = %v, want InvalidArgument about the machine", err)
	}
	if fake.request(driver.MethodCreateMachine) != nil {
		t.Error("the driver was called with a malformed request")
	}
}

// TestHealthIsServing checks the standard health service, for the whole
// server and for the Driver service.
func TestHealthIsServing(t *testing.T) {
	path := socketPath(t)
	servePlugin(t, path, newFake("fake"))
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, service := range []string{"", "millwright.driver.v1.Driver"} {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q = %v, %v; want SERVING", service, resp.GetStatus(), err)
		}
	}
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "no.such.Service"}); status.Code(err) != grpccodes.NotFound {
		t.Errorf("health of an unknown service = %v, want NotFound", err)
	}
}
