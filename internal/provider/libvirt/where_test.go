package libvirt

import (
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestClassURIEditedLosesNoVM: a class's uri edited under a running VM
// (here, to a daemon that does not answer) moves no call away from the VM:
// its status is read, a create finds it, and a deletion deletes it, all on
// the daemon it was made on, which the Machine's lastKnownState records.
// Before, the deletion went to the class's new daemon (and on a daemon
// that answered, found nothing and said OK, leaving the VM running).
func TestClassURIEditedLosesNoVM(t *testing.T) {
	d := newDriver(t)
	l := libvirtConn(t)
	m := machine("uri-edit")
	created, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: class("uri-edit", imageSpec())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: class("uri-edit", imageSpec())})
	})
	m.Spec.ProviderID, m.Status.LastKnownState = created.ProviderID, created.LastKnownState
	edited := class("uri-edit", strings.Replace(imageSpec(), "{", `{"uri":"qemu+unix:///system?socket=/nonexistent/libvirt-sock",`, 1))

	status, err := d.GetMachineStatus(ctx(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: edited})
	if err != nil || status.ProviderID != created.ProviderID {
		t.Fatalf("GetMachineStatus after the class's uri was edited: %v, %v; want the VM %s", status, err, created.ProviderID)
	}
	again, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: edited})
	if err != nil || again.ProviderID != created.ProviderID {
		t.Fatalf("CreateMachine after the class's uri was edited: %v, %v; want the VM %s", again, err, created.ProviderID)
	}
	if _, err := d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: edited}); err != nil {
		t.Fatalf("DeleteMachine after the class's uri was edited: %v", err)
	}
	if domainExists(t, l, domainName(m)) {
		t.Fatalf("DeleteMachine answered OK and domain %s still runs", domainName(m))
	}
}

// TestVMOnAnotherHostIsNeitherReplacedNorForgotten: a Machine whose
// providerID names another host than the class's libvirt, with no
// lastKnownState to say which daemon (a Machine made before the driver
// recorded it), and whose domain that libvirt does not have. Its VM is
// elsewhere: a create must not make a second one here, and neither a
// status nor a deletion may say it is gone. Before, the create defined a
// new domain and the deletion answered OK.
func TestVMOnAnotherHostIsNeitherReplacedNorForgotten(t *testing.T) {
	d := newDriver(t)
	l := libvirtConn(t)
	cl := class("elsewhere", imageSpec())
	m := machine("elsewhere")
	m.Spec.ProviderID = "libvirt://another-host.example/" + domainName(m)
	t.Cleanup(func() {
		m.Spec.ProviderID = ""
		_, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl})
	})
	calls := map[string]func() error{
		"CreateMachine": func() error {
			_, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl})
			return err
		},
		"GetMachineStatus": func() error {
			_, err := d.GetMachineStatus(ctx(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: cl})
			return err
		},
		"DeleteMachine": func() error {
			_, err := d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if driver.CodeOf(err) != driver.FailedPrecondition || !strings.Contains(driver.MessageOf(err), "another-host.example") {
			t.Errorf("%s of a Machine whose VM is on another host: %v; want FailedPrecondition naming that host", name, err)
		}
	}
	if domainExists(t, l, domainName(m)) {
		t.Fatalf("CreateMachine defined domain %s here while the Machine's VM is on another host", domainName(m))
	}
}
