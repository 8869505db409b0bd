package drivertest

import (
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// testListUIDs: ListMachines reports each VM with the name and UID of the
// Machine it was made for. The orphan collection knows a VM by that UID: a
// VM listed without it, or with another Machine's, is judged by its name
// alone, and a VM whose UID no live Machine has is deleted.
func (s *suite) testListUIDs(t *testing.T, info *driver.GetPluginInfoResponse) {
	if !implements(info, driver.MethodListMachines) {
		return
	}
	m := s.machine(t)
	created := s.create(t, m)
	var found []driver.ListedVM
	for _, vm := range s.list(t) {
		if vm.ProviderID == created.ProviderID || vm.MachineUID == string(m.UID) {
			found = append(found, vm)
		}
	}
	want := driver.ListedVM{ProviderID: created.ProviderID, MachineName: m.Name, MachineUID: string(m.UID)}
	if len(found) != 1 || found[0] != want {
		t.Fatalf("ListMachines reports %+v for the VM CreateMachine made; want exactly %+v", found, want)
	}
}

// testRenamedHost: the host the VMs run on changes its name between calls.
// A driver whose providerIDs embed that name then lists the VM under
// another providerID than the Machine recorded; it must still report the
// Machine's UID, answer GetMachineStatus with the providerID it lists (so
// the orphan collection sees the Machine's own VM, not another one), and
// delete the VM by the providerID recorded before the rename.
func (s *suite) testRenamedHost(t *testing.T, info *driver.GetPluginInfoResponse) {
	m := s.machine(t)
	created := s.create(t, m)
	m.Spec.ProviderID = created.ProviderID
	s.RenameHost(t)

	listed := created.ProviderID
	if implements(info, driver.MethodListMachines) {
		vms := s.vmsOf(t, m)
		if len(vms) != 1 {
			t.Fatalf("after the host's rename ListMachines shows %v for Machine %s (UID %s); want its one VM", vms, m.Name, m.UID)
		}
		listed = vms[0]
	}
	if implements(info, driver.MethodGetMachineStatus) {
		got, err := s.status(m)
		if err != nil {
			t.Fatalf("GetMachineStatus after the host's rename: %v; want the VM made before it", err)
		}
		if got.ProviderID != listed {
			t.Fatalf("after the host's rename GetMachineStatus says providerID %q and ListMachines %q: "+
				"the orphan collection would take the Machine's own VM for another one", got.ProviderID, listed)
		}
	}
	again := s.create(t, m)
	if again.ProviderID != listed {
		t.Fatalf("CreateMachine after the host's rename returned providerID %q; want the existing VM %q", again.ProviderID, listed)
	}
	if err := s.delete(t, m); err != nil {
		t.Fatalf("DeleteMachine by the providerID recorded before the host's rename (%s): %v", created.ProviderID, err)
	}
	if implements(info, driver.MethodListMachines) {
		if vms := s.vmsOf(t, m); len(vms) != 0 {
			t.Fatalf("DeleteMachine by the providerID recorded before the host's rename left %v", vms)
		}
	}
}
