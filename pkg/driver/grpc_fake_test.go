package driver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// fakeDriver is an in-memory Driver for transport tests: every method hands
// its request to handle, whose answer it returns. By default it records the
// request and returns the response set for the method.
type fakeDriver struct {
	name string

	// mu guards the fields below: tests change them while the server's
	// goroutines read them.
	mu     sync.Mutex
	handle func(ctx context.Context, m driver.Method, req any) (any, error)
	got    map[driver.Method]any
	resp   map[driver.Method]any
}

func newFake(name string) *fakeDriver {
	f := &fakeDriver{name: name, got: map[driver.Method]any{}, resp: map[driver.Method]any{}}
	f.handle = func(_ context.Context, m driver.Method, req any) (any, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.got[m] = req
		if m == driver.MethodGetPluginInfo && f.resp[m] == nil {
			return &driver.GetPluginInfoResponse{Name: f.name, Version: "v0.0.1"}, nil
		}
		return f.resp[m], nil
	}
	return f
}

func (f *fakeDriver) setHandle(h func(ctx context.Context, m driver.Method, req any) (any, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handle = h
}

func (f *fakeDriver) setResponse(m driver.Method, resp any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resp[m] = resp
}

func (f *fakeDriver) request(m driver.Method) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[m]
}

// call runs the handler and asserts its answer to the method's response type;
// a nil answer stays a nil response of that type.
func call[R any](ctx context.Context, f *fakeDriver, m driver.Method, req any) (*R, error) {
	f.mu.Lock()
	handle := f.handle
	f.mu.Unlock()
	resp, err := handle(ctx, m, req)
	if resp == nil {
		return nil, err
	}
	return resp.(*R), err
}

func (f *fakeDriver) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	return call[driver.CreateMachineResponse](ctx, f, driver.MethodCreateMachine, req)
}

func (f *fakeDriver) InitializeMachine(ctx context.Context, req *driver.InitializeMachineRequest) (*driver.InitializeMachineResponse, error) {
	return call[driver.InitializeMachineResponse](ctx, f, driver.MethodInitializeMachine, req)
}

func (f *fakeDriver) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	return call[driver.DeleteMachineResponse](ctx, f, driver.MethodDeleteMachine, req)
}

func (f *fakeDriver) GetMachineStatus(ctx context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	return call[driver.GetMachineStatusResponse](ctx, f, driver.MethodGetMachineStatus, req)
}

func (f *fakeDriver) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	return call[driver.ListMachinesResponse](ctx, f, driver.MethodListMachines, req)
}

func (f *fakeDriver) GetVolumeIDs(ctx context.Context, req *driver.GetVolumeIDsRequest) (*driver.GetVolumeIDsResponse, error) {
	return call[driver.GetVolumeIDsResponse](ctx, f, driver.MethodGetVolumeIDs, req)
}

func (f *fakeDriver) UpdateMachine(ctx context.Context, req *driver.UpdateMachineRequest) (*driver.UpdateMachineResponse, error) {
	return call[driver.UpdateMachineResponse](ctx, f, driver.MethodUpdateMachine, req)
}

func (f *fakeDriver) GetPluginInfo(ctx context.Context, req *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	return call[driver.GetPluginInfoResponse](ctx, f, driver.MethodGetPluginInfo, req)
}

func (f *fakeDriver) ReceiveEvents(ctx context.Context, req *driver.ReceiveEventsRequest) (*driver.ReceiveEventsResponse, error) {
	return call[driver.ReceiveEventsResponse](ctx, f, driver.MethodReceiveEvents, req)
}

// socketPath returns a unix socket path in a fresh temporary directory.
func socketPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "driver.sock")
}

// servePlugin serves d on a unix socket with ServeEndpoint until the
// returned stop is called (or the test ends); stop fails the test if serving
// failed or did not stop in time.
func servePlugin(t testing.TB, path string, d driver.Driver) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- driver.ServeEndpoint(ctx, "unix://"+path, d) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ServeEndpoint: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("ServeEndpoint did not return 30s after its context was cancelled")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// dial returns a client of the plugin at path, closed when the test ends.
func dial(t testing.TB, path string, opts ...driver.DialOption) *driver.Client {
	t.Helper()
	c, err := driver.Dial("unix://"+path, opts...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The objects below are shaped like the ones the manager sends: a running
// Machine of a MachineDeployment, a class with a providerSpec, a Secret with
// a boot script. Times are whole seconds because their JSON form is.

var created = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

func testMachine(name string) *v1alpha1.Machine {
	return &v1alpha1.Machine{
		TypeMeta: metav1.TypeMeta{APIVersion: "machine.millwright.dev/v1alpha1", Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "fleet", UID: "5b0c2c47-8a4e-4bb3-9a4b-2f3d7d1d2c11",
			ResourceVersion: "48213", Generation: 3, CreationTimestamp: created,
			Labels: map[string]string{
				"machine.millwright.dev/deployment": "workers", "machine.millwright.dev/set": "workers-7d9f",
				"topology.kubernetes.io/zone": "zone-a",
			},
			Annotations: map[string]string{"machine.millwright.dev/last-applied-class-hash": "9f86d081884c7d65"},
			Finalizers:  []string{"machine.millwright.dev/machine"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "machine.millwright.dev/v1alpha1", Kind: "MachineSet", Name: "workers-7d9f",
				UID: "c2b1a0f9-1111-4e1d-9c0e-0a1b2c3d4e5f", Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
		Spec: v1alpha1.MachineSpec{
			ClusterName: "prod-eu", Class: &v1alpha1.MachineClassReference{Name: "m5-large"},
			ProviderID: "sim://zone-a/" + name, FailureDomain: "zone-a",
		},
		Status: v1alpha1.MachineStatus{
			Phase: v1alpha1.PhaseRunning, NodeName: name,
			NodeRef: &v1alpha1.NodeReference{Kind: "Node", Name: name},
			Addresses: []v1alpha1.MachineAddress{
				{Type: v1alpha1.MachineInternalIP, Address: "10.0.3.17"},
				{Type: v1alpha1.MachineHostName, Address: name},
			},
			Conditions: []metav1.Condition{
				{Type: "InfrastructureReady", Status: metav1.ConditionTrue, Reason: "Created", Message: "VM created", LastTransitionTime: created, ObservedGeneration: 3},
				{Type: "NodeReady", Status: metav1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastTransitionTime: created, ObservedGeneration: 3},
				{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: created, ObservedGeneration: 3},
			},
			LastOperation: v1alpha1.LastOperation{
				Type: v1alpha1.OperationCreate, State: v1alpha1.OperationSucceeded,
				Description: "Machine created", LastUpdateTime: created,
			},
			LastKnownState:     `{"op":"create","step":"done"}`,
			ObservedGeneration: 3,
		},
	}
}

func testClass() *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "machine.millwright.dev/v1alpha1", Kind: "MachineClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "m5-large", Namespace: "fleet", ResourceVersion: "1207", CreationTimestamp: created},
		Spec: v1alpha1.MachineClassSpec{
			Provider: "sim",
			ProviderSpec: runtime.RawExtension{Raw: []byte(
				`{"image":"ubuntu-24.04","size":"large","zone":"zone-a","rootFsSize":50,"tags":{"team":"platform","cost-center":"42"}}`)},
			SecretRef: &corev1.SecretReference{Name: "workers-userdata", Namespace: "fleet"},
			NodeTemplate: &v1alpha1.NodeTemplate{
				Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
				InstanceType: "large", Region: "eu", Zone: "zone-a",
			},
		},
	}
}

func testSecret() *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "workers-userdata", Namespace: "fleet"},
		Data: map[string][]byte{
			"userData":    []byte("#!/bin/bash\n" + strings.Repeat("echo joining the cluster as <<MACHINE_NAME>>\n", 40)),
			"accessKeyID": []byte("AKIAEXAMPLE"), "secretAccessKey": []byte("wJalrXUtnFEMI/K7MDENG/bPxRfiCY"),
		},
		Type: corev1.SecretTypeOpaque,
	}
}

func testPVSpec(i int) *corev1.PersistentVolumeSpec {
	return &corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(fmt.Sprintf("%dGi", 10*i))},
		PersistentVolumeSource: corev1.PersistentVolumeSource{
			CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.sim.millwright.dev", VolumeHandle: fmt.Sprintf("vol-%03d", i)},
		},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
	}
}
