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

// memDriver is the smallest correct driver: VMs in a map keyed by the
// Machine's namespace and name, on a host whose name is part of every
// providerID. It shows the suite passes a driver that keeps the contract.
type memDriver struct {
	driver.UnimplementedDriver
	mu   sync.Mutex
	vms  map[string]string // Machine key -> VM ID (its providerID without the host)
	uids map[string]string // Machine key -> the Machine's UID
	host string
	// staleStatus makes GetMachineStatus answer the providerID the Machine
	// recorded, not the VM's current one: after a host's rename the orphan
	// collection would take the Machine's VM for another. A bug the suite
	// must catch.
	staleStatus bool
	// noUIDs leaves the Machine UIDs out of ListMachines: a bug the suite
	// must catch.
	noUIDs bool
	// foreignLabels reports a node role among the Node labels: a label the
	// manager drops, which the suite must catch.
	foreignLabels bool
	// breakIdempotency makes every create a new VM, the bug the suite must catch.
	breakIdempotency bool
	// ignorePageToken answers the first page of ListMachines whatever the
	// token asks: a bug the suite must catch.
	ignorePageToken bool
	// keyByName keys VMs by Machine name alone, so Machines of one name in
	// two namespaces share a VM: the other bug the suite must catch.
	keyByName bool
	creates   int
}

func (d *memDriver) key(m *v1alpha1.Machine) string {
	if d.keyByName {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}

func (d *memDriver) nodeName(m *v1alpha1.Machine) string {
	if d.keyByName {
		return m.Name
	}
	return m.Namespace + "." + m.Name
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
	id, ok := d.vms[d.key(req.Machine)]
	if !ok || d.breakIdempotency {
		sum := sha256.Sum256([]byte(d.key(req.Machine) + strings.Repeat("x", d.creates*boolInt(d.breakIdempotency))))
		id = hex.EncodeToString(sum[:6])
		d.vms[d.key(req.Machine)] = id
		d.uids[d.key(req.Machine)] = string(req.Machine.UID)
	}
	resp := &driver.CreateMachineResponse{ProviderID: d.providerID(id), NodeName: d.nodeName(req.Machine),
		NodeLabels: map[string]string{driver.CapacityTypeLabel: driver.CapacityTypeOnDemand}}
	if d.foreignLabels {
		resp.NodeLabels["node-role.kubernetes.io/control-plane"] = ""
	}
	return resp, nil
}

func (d *memDriver) providerID(id string) string { return "mem://" + d.host + "/" + id }

// renameHost renames the driver's host.
func (d *memDriver) renameHost(*testing.T) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.host = "renamed." + d.host
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
	delete(d.vms, d.key(req.Machine))
	return &driver.DeleteMachineResponse{}, nil
}

func (d *memDriver) GetMachineStatus(_ context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.vms[d.key(req.Machine)]
	if !ok {
		return nil, driver.Errorf(driver.NotFound, "no VM for machine %s", d.key(req.Machine))
	}
	pid := d.providerID(id)
	if d.staleStatus && req.Machine.Spec.ProviderID != "" {
		pid = req.Machine.Spec.ProviderID
	}
	return &driver.GetMachineStatusResponse{ProviderID: pid, NodeName: d.nodeName(req.Machine)}, nil
}

func (d *memDriver) ListMachines(_ context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.ListedVM
	for key, id := range d.vms {
		vm := driver.ListedVM{ProviderID: d.providerID(id), MachineName: key[strings.LastIndex(key, "/")+1:], MachineUID: d.uids[key]}
		if d.noUIDs {
			vm.MachineUID = ""
		}
		out = append(out, vm)
	}
	page := *req
	if d.ignorePageToken {
		page.PageToken = ""
	}
	return driver.PageOf(out, &page), nil
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

// newMem readies d's maps and host.
func newMem(d *memDriver) *memDriver {
	d.vms, d.uids, d.host = map[string]string{}, map[string]string{}, "host-1"
	return d
}

func config(d *memDriver) drivertest.Config {
	return drivertest.Config{Driver: d, Class: class(`{"size":"small"}`), InvalidClass: class(`{"size":""}`), RenameHost: d.renameHost}
}

func TestSuitePassesACorrectDriver(t *testing.T) {
	drivertest.Run(t, config(newMem(&memDriver{})))
}

// TestSuiteCatchesMachinesSharingAVM runs the suite against a driver that
// keys VMs by Machine name alone, in a child process, and expects it to fail.
func TestSuiteCatchesMachinesSharingAVM(t *testing.T) {
	if os.Getenv("DRIVERTEST_BROKEN") == "1" {
		drivertest.Run(t, config(newMem(&memDriver{keyByName: true})))
		return
	}
	out := runBroken(t, "TestSuiteCatchesMachinesSharingAVM")
	if !strings.Contains(out, "two Machines share a VM") {
		t.Fatalf("the suite failed, but not on Machines sharing a VM:\n%s", out)
	}
}

// runBroken runs test in a child process with DRIVERTEST_BROKEN=1, expects
// it to fail and returns its output.
func runBroken(t *testing.T, test string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "DRIVERTEST_BROKEN=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed a broken driver:\n%s", out)
	}
	return string(out)
}

// TestSuiteCatchesTwoVMsForOneMachine runs the suite against a driver that
// creates a new VM on every call, in a child process, and expects it to fail.
func TestSuiteCatchesTwoVMsForOneMachine(t *testing.T) {
	if os.Getenv("DRIVERTEST_BROKEN") == "1" {
		drivertest.Run(t, config(newMem(&memDriver{breakIdempotency: true})))
		return
	}
	out := runBroken(t, "TestSuiteCatchesTwoVMsForOneMachine")
	if !strings.Contains(out, "two VMs for one Machine") {
		t.Fatalf("the suite failed, but not on idempotency:\n%s", out)
	}
}

// TestSuiteCatchesAStaleStatusAfterARename runs the suite against a driver
// whose GetMachineStatus answers the providerID the Machine recorded before
// its host was renamed, in a child process, and expects it to fail.
func TestSuiteCatchesAStaleStatusAfterARename(t *testing.T) {
	if os.Getenv("DRIVERTEST_BROKEN") == "1" {
		drivertest.Run(t, config(newMem(&memDriver{staleStatus: true})))
		return
	}
	out := runBroken(t, "TestSuiteCatchesAStaleStatusAfterARename")
	if !strings.Contains(out, "would take the Machine's own VM for another one") {
		t.Fatalf("the suite failed, but not on the stale providerID:\n%s", out)
	}
}

// TestSuiteCatchesVMsListedWithoutUIDs runs the suite against a driver
// whose ListMachines leaves the Machine UIDs out, in a child process, and
// expects it to fail.
func TestSuiteCatchesVMsListedWithoutUIDs(t *testing.T) {
	if os.Getenv("DRIVERTEST_BROKEN") == "1" {
		drivertest.Run(t, config(newMem(&memDriver{noUIDs: true})))
		return
	}
	out := runBroken(t, "TestSuiteCatchesVMsListedWithoutUIDs")
	if !strings.Contains(out, "ListMachines reports") {
		t.Fatalf("the suite failed, but not on the missing UIDs:\n%s", out)
	}
}

// TestSuiteCatchesForeignNodeLabels runs the suite against a driver that
// reports a node role among its Node labels, in a child process, and
// expects it to fail.
func TestSuiteCatchesForeignNodeLabels(t *testing.T) {
	if os.Getenv("DRIVERTEST_BROKEN") == "1" {
		drivertest.Run(t, config(newMem(&memDriver{foreignLabels: true})))
		return
	}
	out := runBroken(t, "TestSuiteCatchesForeignNodeLabels")
	if !strings.Contains(out, "node-role.kubernetes.io/control-plane") {
		t.Fatalf("the suite failed, but not on the foreign Node label:\n%s", out)
	}
}

// TestSuiteCatchesPagesThatRepeat runs the suite against a driver whose
// ListMachines answers the first page whatever the token, in a child
// process, and expects it to fail.
func TestSuiteCatchesPagesThatRepeat(t *testing.T) {
	if os.Getenv("DRIVERTEST_BROKEN") == "1" {
		drivertest.Run(t, config(newMem(&memDriver{ignorePageToken: true})))
		return
	}
	out := runBroken(t, "TestSuiteCatchesPagesThatRepeat")
	if !strings.Contains(out, "on two pages") {
		t.Fatalf("the suite failed, but not on the repeated page:\n%s", out)
	}
}
