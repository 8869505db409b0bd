package sim

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func TestCreateIsIdempotentAndDeterministic(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("small", basicSpec)
	m := machine("m1", "small")
	first := mustCreate(t, s, m, mc)
	second := mustCreate(t, s, m, mc)
	if first.ProviderID != second.ProviderID || first.NodeName != second.NodeName {
		t.Fatalf("second create returned %+v, first %+v", second, first)
	}
	wantID := "vm-" + shortHash("default/m1", 10)
	if !regexp.MustCompile(`^sim://local/local-[ab]/` + wantID + `$`).MatchString(first.ProviderID) {
		t.Errorf("providerID %q; want sim://local/<zone>/%s", first.ProviderID, wantID)
	}
	if first.NodeName != "m1" {
		t.Errorf("node name %q; want the machine name", first.NodeName)
	}
	if len(first.Addresses) != 2 || first.Addresses[0].Type != v1alpha1.MachineInternalIP ||
		!regexp.MustCompile(`^10\.\d+\.\d+\.\d+$`).MatchString(first.Addresses[0].Address) ||
		first.Addresses[1] != (v1alpha1.MachineAddress{Type: v1alpha1.MachineHostName, Address: "m1"}) {
		t.Errorf("addresses %+v", first.Addresses)
	}
	if h := s.Cloud().History(); len(h) != 1 {
		t.Fatalf("two creates of one Machine made %d VMs: %+v", len(h), h)
	}
	// Another sim, another process: the same Machine gets the same VM.
	other, _ := newTestSim(t, Options{})
	if again := mustCreate(t, other, m, mc); again.ProviderID != first.ProviderID || again.Addresses[0] != first.Addresses[0] {
		t.Errorf("a fresh sim made %+v for the same Machine, the first %+v", again, first)
	}
}

func TestConcurrentCreatesMakeOneVM(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("small", basicSpec)
	m := machine("m1", "small")
	var wg sync.WaitGroup
	ids := make([]string, 32)
	for i := range ids {
		wg.Go(func() {
			if resp, err := create(s, m, mc); err == nil {
				ids[i] = resp.ProviderID
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("concurrent creates returned %v", ids)
		}
	}
	if n := len(s.Cloud().History()); n != 1 {
		t.Fatalf("%d VMs for one Machine", n)
	}
}

func TestCreateForAMachineOfAnotherClassIsAlreadyExists(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mustCreate(t, s, machine("m1", "a"), class("a", basicSpec))
	_, err := create(s, machine("m1", "b"), class("b", basicSpec))
	wantCode(t, "create of a Machine whose VM came from another class", err, driver.AlreadyExists)
}

func TestZonesAreSpreadDeterministically(t *testing.T) {
	spread := func() map[string]string {
		s, _ := newTestSim(t, Options{})
		mc := class("c", `{"region":"r","zones":["z1","z2","z3"]}`)
		out := map[string]string{}
		for i := range 9 {
			vm := s.Cloud().MachineVMs("default", fmt.Sprintf("m%d", i))
			if len(vm) != 0 {
				t.Fatal("VM before create")
			}
			mustCreate(t, s, machine(fmt.Sprintf("m%d", i), "c"), mc)
			out[fmt.Sprintf("m%d", i)] = s.Cloud().MachineVMs("default", fmt.Sprintf("m%d", i))[0].Zone
		}
		return out
	}
	a, b := spread(), spread()
	perZone := map[string]int{}
	for m, z := range a {
		perZone[z]++
		if b[m] != z {
			t.Errorf("%s went to %s, then to %s", m, z, b[m])
		}
	}
	if perZone["z1"] != 3 || perZone["z2"] != 3 || perZone["z3"] != 3 {
		t.Errorf("9 VMs over 3 zones: %v", perZone)
	}
}

func TestRecreatedMachineGetsANewVMAndHistoryKeepsBoth(t *testing.T) {
	s, fc := newTestSim(t, Options{})
	mc := class("c", basicSpec)
	m := machine("m1", "c")
	first := mustCreate(t, s, m, mc)
	fc.Step(1)
	if err := del(s, m, mc); err != nil {
		t.Fatal(err)
	}
	second := mustCreate(t, s, m, mc)
	if second.ProviderID == first.ProviderID {
		t.Fatalf("a recreated Machine got the deleted VM's providerID %s again", first.ProviderID)
	}
	h := s.Cloud().History()
	if len(h) != 2 || h[0].DeletedAt == nil || h[1].DeletedAt != nil || h[0].MachineName != "m1" || h[1].MachineName != "m1" {
		t.Fatalf("history %+v", h)
	}
	if !h[0].DeletedAt.Equal(epoch.Add(1)) {
		t.Errorf("deletedAt %v; want the clock's time", h[0].DeletedAt)
	}
}

func TestDeleteOfAbsentVMIsOK(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", basicSpec)
	m := machine("never", "c")
	if err := del(s, m, mc); err != nil {
		t.Fatalf("delete of a Machine without VM: %v", err)
	}
	mustCreate(t, s, m, mc)
	for i := range 2 {
		if err := del(s, m, mc); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
	}
	if vms := s.Cloud().VMs(); len(vms) != 0 {
		t.Fatalf("VMs left: %+v", vms)
	}
}

func TestGetMachineStatus(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	plain := class("plain", basicSpec)
	initc := class("init", `{"region":"local","zones":["local-a"],"requireInitialization":true}`)
	ctx := context.Background()

	_, err := status(s, machine("m1", "plain"), plain)
	wantCode(t, "status before create", err, driver.NotFound)

	created := mustCreate(t, s, machine("m1", "plain"), plain)
	got, err := status(s, machine("m1", "plain"), plain)
	if err != nil || got.ProviderID != created.ProviderID || got.NodeName != "m1" || len(got.Addresses) != 2 {
		t.Fatalf("status after create: %+v, %v", got, err)
	}

	mi := machine("m2", "init")
	mustCreate(t, s, mi, initc)
	_, err = status(s, mi, initc)
	wantCode(t, "status of a VM that needs initialization", err, driver.Uninitialized)
	ir, err := s.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: mi, MachineClass: initc})
	if err != nil || ir.NodeName != "m2" {
		t.Fatalf("InitializeMachine: %+v, %v", ir, err)
	}
	if _, err := status(s, mi, initc); err != nil {
		t.Fatalf("status after initialize: %v", err)
	}

	// A second VM claiming the Machine: OutOfRange, until it is gone.
	orphan, err := s.Cloud().CreateOrphan(OrphanRequest{Namespace: "default", ClassName: "plain", MachineName: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	if orphan.NodeName == "m1" {
		t.Errorf("the second VM of m1 got the first one's node name")
	}
	_, err = status(s, machine("m1", "plain"), plain)
	wantCode(t, "status with two VMs", err, driver.OutOfRange)
	if !strings.Contains(driver.MessageOf(err), orphan.ProviderID) {
		t.Errorf("OutOfRange message %q does not list %s", driver.MessageOf(err), orphan.ProviderID)
	}
	if _, err := s.Cloud().DeleteVM(orphan.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := status(s, machine("m1", "plain"), plain); err != nil {
		t.Fatalf("status after the orphan went: %v", err)
	}
}

// TestCapacityTypeIsANodeLabel: a class with capacityType has the sim
// report it as driver.CapacityTypeLabel from CreateMachine and
// GetMachineStatus; a class without reports no labels.
func TestCapacityTypeIsANodeLabel(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	spot := class("spot", `{"region":"local","zones":["local-a"],"capacityType":"spot"}`)
	plain := class("plain", basicSpec)
	want := map[string]string{driver.CapacityTypeLabel: "spot"}
	created := mustCreate(t, s, machine("m1", "spot"), spot)
	if !maps.Equal(created.NodeLabels, want) {
		t.Errorf("CreateMachine's NodeLabels = %v, want %v", created.NodeLabels, want)
	}
	got, err := status(s, machine("m1", "spot"), spot)
	if err != nil || !maps.Equal(got.NodeLabels, want) {
		t.Errorf("GetMachineStatus = %+v, %v; want NodeLabels %v", got, err, want)
	}
	if created := mustCreate(t, s, machine("m2", "plain"), plain); created.NodeLabels != nil {
		t.Errorf("a class without capacityType: NodeLabels = %v, want none", created.NodeLabels)
	}
}

func TestInitializeMachineWithoutVMIsNotFound(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	_, err := s.InitializeMachine(context.Background(), &driver.InitializeMachineRequest{Machine: machine("x", "c"), MachineClass: class("c", basicSpec)})
	wantCode(t, "InitializeMachine without VM", err, driver.NotFound)
}

func TestDeleteWithProviderIDLeavesOtherClaimants(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", basicSpec)
	m := machine("m1", "c")
	resp := mustCreate(t, s, m, mc)
	orphan, err := s.Cloud().CreateOrphan(OrphanRequest{Namespace: "default", ClassName: "c", MachineName: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	m.Spec.ProviderID = resp.ProviderID
	if err := del(s, m, mc); err != nil {
		t.Fatal(err)
	}
	left := s.Cloud().MachineVMs("default", "m1")
	if len(left) != 1 || left[0].ID != orphan.ID {
		t.Fatalf("left %+v; want only the orphan", left)
	}
	// Without a providerID, every VM claiming the Machine goes.
	m.Spec.ProviderID = ""
	if err := del(s, m, mc); err != nil {
		t.Fatal(err)
	}
	if left := s.Cloud().MachineVMs("default", "m1"); len(left) != 0 {
		t.Fatalf("left %+v", left)
	}
}

func TestListMachinesListsTheClassesVMs(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	a, b := class("a", basicSpec), class("b", basicSpec)
	want := map[string]string{}
	for i := range 3 {
		name := fmt.Sprintf("a%d", i)
		want[mustCreate(t, s, machine(name, "a"), a).ProviderID] = name
	}
	mustCreate(t, s, machine("b0", "b"), b)
	orphan, err := s.Cloud().CreateOrphan(OrphanRequest{Namespace: "default", ClassName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	want[orphan.ProviderID] = orphan.MachineName
	if !strings.HasPrefix(orphan.MachineName, "orphan-") {
		t.Errorf("orphan machine name %q", orphan.MachineName)
	}
	if err := del(s, machine("a1", "a"), a); err != nil {
		t.Fatal(err)
	}
	for id, name := range want {
		if name == "a1" {
			delete(want, id)
		}
	}
	resp, err := s.ListMachines(context.Background(), &driver.ListMachinesRequest{MachineClass: a})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(resp.MachineNames()) != fmt.Sprint(want) {
		t.Fatalf("ListMachines(a) = %v; want %v", resp.MachineNames(), want)
	}
	// A class in another namespace with the same name has its own VMs.
	other := class("a", basicSpec)
	other.Namespace = "other"
	resp, err = s.ListMachines(context.Background(), &driver.ListMachinesRequest{MachineClass: other})
	if err != nil || len(resp.MachineNames()) != 0 {
		t.Fatalf("ListMachines(other/a) = %v, %v", resp, err)
	}
}

func TestGetVolumeIDs(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	csi := func(drv, handle string) *corev1.PersistentVolumeSpec {
		return &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			CSI: &corev1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: handle}}}
	}
	hostPath := &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}
	local := &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt"}}}
	for _, tc := range []struct {
		name  string
		specs []*corev1.PersistentVolumeSpec
		want  []string
		code  driver.Code
	}{
		{"none", nil, []string{}, driver.OK},
		{"sim CSI volumes", []*corev1.PersistentVolumeSpec{csi(CSIDriverName, "vol-1"), csi(CSIDriverName, "vol-2")}, []string{"vol-1", "vol-2"}, driver.OK},
		{"others are skipped", []*corev1.PersistentVolumeSpec{hostPath, csi("ebs.csi.aws.com", "vol-x"), local, csi(CSIDriverName, "vol-3")}, []string{"vol-3"}, driver.OK},
		{"null spec", []*corev1.PersistentVolumeSpec{csi(CSIDriverName, "vol-1"), nil}, nil, driver.InvalidArgument},
		{"empty handle", []*corev1.PersistentVolumeSpec{csi(CSIDriverName, "")}, nil, driver.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.GetVolumeIDs(context.Background(), &driver.GetVolumeIDsRequest{PVSpecs: tc.specs})
			wantCode(t, "GetVolumeIDs", err, tc.code)
			if err == nil && !slices.Equal(resp.VolumeIDs, tc.want) {
				t.Fatalf("volume IDs %v; want %v", resp.VolumeIDs, tc.want)
			}
		})
	}
}

func TestUpdateMachineAppliesTagsThreeWays(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	v1 := class("c", `{"region":"local","zones":["local-a"],"tags":{"team":"a","drop":"me"}}`)
	m := machine("m1", "c")
	resp := mustCreate(t, s, m, v1)
	vm := s.Cloud().MachineVMs("default", "m1")[0]
	if vm.Tags["team"] != "a" || vm.Tags["drop"] != "me" {
		t.Fatalf("tags at create %v", vm.Tags)
	}
	// Someone adds a tag in the cloud's console.
	s.Cloud().mu.Lock()
	s.Cloud().vms[vm.ID].Tags["owner"] = "console"
	s.Cloud().mu.Unlock()

	v2 := class("c", `{"region":"local","zones":["local-a"],"tags":{"team":"b","new":"x"}}`)
	_, err := s.UpdateMachine(context.Background(), &driver.UpdateMachineRequest{
		Machine: m, ProviderID: resp.ProviderID, MachineClass: v2,
		LastAppliedProviderSpec: v1.Spec.ProviderSpec,
	})
	if err != nil {
		t.Fatal(err)
	}
	vm = s.Cloud().MachineVMs("default", "m1")[0]
	want := map[string]string{"team": "b", "new": "x", "owner": "console"}
	if fmt.Sprint(vm.Tags) != fmt.Sprint(want) {
		t.Errorf("tags after update %v; want %v", vm.Tags, want)
	}
	if string(vm.AppliedProviderSpec) != string(v2.Spec.ProviderSpec.Raw) || vm.Updates != 1 {
		t.Errorf("applied spec %s, updates %d", vm.AppliedProviderSpec, vm.Updates)
	}
	if vm.ProviderID != resp.ProviderID {
		t.Errorf("update replaced the VM")
	}

	_, err = s.UpdateMachine(context.Background(), &driver.UpdateMachineRequest{
		Machine: m, ProviderID: "sim://local/local-a/vm-0000000000", MachineClass: v2,
	})
	wantCode(t, "update of an unknown VM", err, driver.NotFound)
	other := mustCreate(t, s, machine("m2", "c"), v2)
	_, err = s.UpdateMachine(context.Background(), &driver.UpdateMachineRequest{Machine: m, ProviderID: other.ProviderID, MachineClass: v2})
	wantCode(t, "update of another Machine's VM", err, driver.InvalidArgument)
}

// lastKnownState names the VM; a call with only it (no providerID yet)
// acts on that VM even when another VM claims the Machine too.
func TestLastKnownStateRoundTrips(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", basicSpec)
	m := machine("m1", "c")
	resp := mustCreate(t, s, m, mc)
	st := decodeState(resp.LastKnownState)
	if st.State != "Created" || st.ProviderID != resp.ProviderID || st.VM != idFromProviderID(resp.ProviderID) {
		t.Fatalf("lastKnownState %q; want it to name %s", resp.LastKnownState, resp.ProviderID)
	}
	// A second VM claims the Machine; the Machine's state names it.
	second, err := s.Cloud().CreateOrphan(OrphanRequest{Namespace: "default", ClassName: "c", MachineName: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	m.Status.LastKnownState = encodeState(&second, "Created")
	if _, err := s.UpdateMachine(context.Background(), &driver.UpdateMachineRequest{Machine: m, MachineClass: mc}); err != nil {
		t.Fatal(err)
	}
	for _, vm := range s.Cloud().MachineVMs("default", "m1") {
		if want := map[bool]int{true: 1, false: 0}[vm.ID == second.ID]; vm.Updates != want {
			t.Errorf("VM %s got %d updates; want %d", vm.ID, vm.Updates, want)
		}
	}
	// Without a usable hint the oldest VM is the Machine's.
	m.Status.LastKnownState = "not json"
	if _, err := s.UpdateMachine(context.Background(), &driver.UpdateMachineRequest{Machine: m, MachineClass: mc}); err != nil {
		t.Fatal(err)
	}
	if vm, _ := s.Cloud().VM(st.VM); vm.Updates != 1 {
		t.Errorf("the oldest VM got %d updates; want 1", vm.Updates)
	}
	dr, err := s.DeleteMachine(context.Background(), &driver.DeleteMachineRequest{Machine: m, MachineClass: mc})
	if err != nil || decodeState(dr.LastKnownState).State != "Deleted" {
		t.Fatalf("delete: %+v, %v", dr, err)
	}
	if decodeState("not json").VM != "" || decodeState("").VM != "" {
		t.Error("an unreadable lastKnownState must read as empty")
	}
}

func TestGetPluginInfoListsEveryOptionalMethod(t *testing.T) {
	s, _ := newTestSim(t, Options{Name: "sim-east"})
	s.Cloud().SetOutage(true)
	info, err := s.GetPluginInfo(context.Background(), &driver.GetPluginInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(info.Implements)
	want := slices.Clone(driver.OptionalMethods)
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	if info.Name != "sim-east" || info.Version != Version || !slices.Equal(got, want) {
		t.Fatalf("GetPluginInfo = %+v", info)
	}
}

// Thousands of VMs: unique IDs, providerIDs and IPs, and ListMachines sees all.
func TestManyVMsStayUnique(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", basicSpec)
	const n = 6000
	ips := map[string]bool{}
	for i := range n {
		resp := mustCreate(t, s, machine(fmt.Sprintf("m-%05d", i), "c"), mc)
		ip := resp.Addresses[0].Address
		if ips[ip] {
			t.Fatalf("IP %s given twice", ip)
		}
		ips[ip] = true
	}
	list, err := s.ListMachines(context.Background(), &driver.ListMachinesRequest{MachineClass: mc})
	if err != nil || len(list.MachineNames()) != n {
		t.Fatalf("ListMachines: %d, %v", len(list.MachineNames()), err)
	}
	zones := map[string]int{}
	for _, vm := range s.Cloud().VMs() {
		zones[vm.Zone]++
	}
	if zones["local-a"] != n/2 || zones["local-b"] != n/2 {
		t.Errorf("zones %v", zones)
	}
}

func BenchmarkCreateMachine(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	mc := class("c", basicSpec)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		m := machine(fmt.Sprintf("m-%d", i), "c")
		if _, err := s.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: mc}); err != nil {
			b.Fatal(err)
		}
	}
}

// UpdateMachine with another class (an in-place update) moves the VM to
// that class when the change can be made to a running VM, and refuses with
// FailedPrecondition, changing nothing, what only a new VM can have.
func TestUpdateMachineToAnotherClassOrRefuses(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	v1 := class("c1", `{"region":"local","zones":["local-a"],"image":"ubuntu-24.04","tags":{"team":"a"}}`)
	m := machine("m1", "c1")
	resp := mustCreate(t, s, m, v1)

	for _, tc := range []struct{ name, spec, field string }{
		{"another image", `{"region":"local","zones":["local-a"],"image":"ubuntu-26.04"}`, "providerSpec.image"},
		{"another zone", `{"region":"local","zones":["local-b"],"image":"ubuntu-24.04"}`, "providerSpec.zones"},
		{"another region", `{"region":"far","zones":["local-a"],"image":"ubuntu-24.04"}`, "providerSpec.region"},
		{"another instance type", `{"region":"local","zones":["local-a"],"image":"ubuntu-24.04","instanceType":"sim.large"}`, "providerSpec.instanceType"},
	} {
		_, err := s.UpdateMachine(context.Background(), &driver.UpdateMachineRequest{
			Machine: m, ProviderID: resp.ProviderID, MachineClass: class("c2", tc.spec), LastAppliedProviderSpec: v1.Spec.ProviderSpec,
		})
		wantCode(t, tc.name, err, driver.FailedPrecondition)
		if !strings.Contains(driver.MessageOf(err), tc.field) {
			t.Errorf("%s: message %q does not name %s", tc.name, driver.MessageOf(err), tc.field)
		}
	}
	if vm := s.Cloud().MachineVMs("default", "m1")[0]; vm.Updates != 0 || vm.ClassName != "c1" || vm.Tags["team"] != "a" {
		t.Fatalf("a refused update changed the VM: class %s, %d updates, tags %v", vm.ClassName, vm.Updates, vm.Tags)
	}

	// Tags, another zone list still holding the VM's zone: in place.
	v2 := class("c2", `{"region":"local","zones":["local-a","local-b"],"image":"ubuntu-24.04","tags":{"team":"b"}}`)
	if _, err := s.UpdateMachine(context.Background(), &driver.UpdateMachineRequest{
		Machine: m, ProviderID: resp.ProviderID, MachineClass: v2, LastAppliedProviderSpec: v1.Spec.ProviderSpec,
	}); err != nil {
		t.Fatal(err)
	}
	vm := s.Cloud().MachineVMs("default", "m1")[0]
	if vm.ClassName != "c2" || vm.Tags["team"] != "b" || vm.Updates != 1 || vm.ProviderID != resp.ProviderID {
		t.Fatalf("after the update: class %s, tags %v, %d updates, providerID %s", vm.ClassName, vm.Tags, vm.Updates, vm.ProviderID)
	}
	// The VM is the new class's now: CreateMachine with it finds it.
	if again := mustCreate(t, s, m, v2); again.ProviderID != resp.ProviderID {
		t.Fatalf("CreateMachine with the new class made %s", again.ProviderID)
	}
	list, err := s.ListMachines(context.Background(), &driver.ListMachinesRequest{MachineClass: v2})
	if err != nil || list.MachineNames()[resp.ProviderID] != "m1" {
		t.Fatalf("ListMachines of the new class: %v, %v", list, err)
	}
}
