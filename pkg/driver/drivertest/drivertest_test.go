package drivertest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
	"github.com/millwright-dev/millwright/pkg/driver/drivertest"
)

// memDriver is the smallest correct driver: VMs in a map keyed by machine
// name. It shows the suite passes a driver that keeps the contract.
type memDriver struct {
	driver.UnimplementedDriver
	mu  sync.Mutex
	vms map[string]string // machine name -> providerID
	// breakIdempotency makes every create a new VM, the bug the suite must catch.
	breakIdempotency bool
	creates          int
}

type spec struct {
	Size string `json:"size"`
}

func (d *memDriver) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, driver.Errorf(driver.CodeOf(err), "%v", err)
	}
	var s spec
	if err := json.Unmarshal(req.MachineClass.Spec.ProviderSpec.Raw, &s); err != nil || s.Size == "" {
		return nil, driver.Errorf(driver.InvalidArgument, "providerSpec.size: required, e.g. \"small\"")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.creates++
	id, ok := d.vms[req.Machine.Name]
	if !ok || d.breakIdempotency {
		sum := sha256.Sum256([]byte(req.Machine.Name + strings.Repeat("x", d.creates*boolInt(d.breakIdempotency))))
		id = "mem://" + hex.EncodeToString(sum[:6])
		d.vms[req.Machine.Name] = id
	}
	return &driver.CreateMachineResponse{ProviderID: id, NodeName: req.Machine.Name}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (d *memDriver) DeleteMachine(_ context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.vms, req.Machine.Name)
	return &driver.DeleteMachineResponse{}, nil
}

func (d *memDriver) GetMachineStatus(_ context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.vms[req.Machine.Name]
	if !ok {
		return nil, driver.Errorf(driver.NotFound, "no VM for machine %s", req.Machine.Name)
	}
	return &driver.GetMachineStatusResponse{ProviderID: id, NodeName: req.Machine.Name}, nil
}

func (d *memDriver) ListMachines(context.Context, *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for name, id := range d.vms {
		out[id] = name
	}
	return &driver.ListMachinesResponse{MachineList: out}, nil
}

func (d *memDriver) GetPluginInfo(context.Context, *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	return &driver.GetPluginInfoResponse{Name: "mem", Version: "test",
		Implements: []driver.Method{driver.MethodGetMachineStatus, driver.MethodListMachines}}, nil
}

func class(providerSpec string) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "mem", Namespace: "default"},
		Spec:       v1alpha1.MachineClassSpec{Provider: "mem", ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)}},
	}
}

func config(d driver.Driver) drivertest.Config {
	return drivertest.Config{Driver: d, Class: class(`{"size":"small"}`), InvalidClass: class(`{"size":""}`)}
}

func TestSuitePassesACorrectDriver(t *testing.T) {
	drivertest.Run(t, config(&memDriver{vms: map[string]string{}}))
}

// TestSuiteCatchesTwoVMsForOneMachine runs the suite against a driver that
// creates a new VM on every call, in a child process, and expects it to fail.
func TestSuiteCatchesTwoVMsForOneMachine(t *testing.T) {
	if os.Getenv("DRIVERTEST_BROKEN") == "1" {
		drivertest.Run(t, config(&memDriver{vms: map[string]string{}, breakIdempotency: true}))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteCatchesTwoVMsForOneMachine$")
	cmd.Env = append(os.Environ(), "DRIVERTEST_BROKEN=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed a driver that makes two VMs for one Machine:\n%s", out)
	}
	if !strings.Contains(string(out), "two VMs for one Machine") {
		t.Fatalf("the suite failed, but not on idempotency:\n%s", out)
	}
}
