package libvirt

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/kdomanski/iso9660"
	corev1 "k8s.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/yaml"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/nodeagent"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestInvalidProviderSpecNamesTheField checks every refusal is
// InvalidArgument and names the field to fix, including the ones found
// only on the libvirt host (a missing kernel file or image volume).
func TestInvalidProviderSpecNamesTheField(t *testing.T) {
	d := newDriver(t)
	pool := fmt.Sprintf("%q", fixture.pool)
	bootFile := fmt.Sprintf("%q", writeBootFile(t, "boot-file"))
	for _, tc := range []struct{ spec, field string }{
		{``, "providerSpec"},
		{`{"image":"x","pool":` + pool + `,"colour":"red"}`, "providerSpec.colour"},
		{`{"image":"x","pool":` + pool + `,"cpus":"two"}`, "providerSpec.cpus"},
		{`{"image":"x","pool":` + pool + `,"cpus":100}`, "providerSpec.cpus"},
		{`{"image":"x","pool":` + pool + `,"memory":"64Mi"}`, "providerSpec.memory"},
		{`{"image":"x","pool":` + pool + `,"domainType":"xen"}`, "providerSpec.domainType"},
		{`{"image":"x","pool":` + pool + `,"domainType":"auto"}`, "providerSpec.domainType"},
		{`{"memory":"128Mi"}`, "providerSpec.kernel"},
		{`{"image":"x","pool":` + pool + `,"cmdline":"root=/dev/vda"}`, "providerSpec.initramfs"},
		{`{"kernel":` + bootFile + `,"image":"no-such-image","pool":` + pool + `}`, "providerSpec.image"},
		{`{"kernel":"/nonexistent/vmlinuz"}`, "providerSpec.kernel"},
		{`{"kernel":` + bootFile + `,"initramfs":` + fmt.Sprintf("%q", filepath.Join(fixture.dir, "no-such-initrd.img")) + `}`, "providerSpec.initramfs"},
		{`{"kernel":"/proc","initramfs":"/proc/version"}`, "providerSpec.kernel"},
		{`{"image":"no-such-image","pool":` + pool + `}`, "providerSpec.image"},
		{`{"image":"x","pool":"no-such-pool"}`, "providerSpec.pool"},
		{`{"image":"x","pool":` + pool + `,"network":{"name":"no-such-network"}}`, "providerSpec.network.name"},
		{`{"image":` + fmt.Sprintf("%q", fixture.image) + `,"pool":` + pool + `,"diskSize":"1Mi"}`, "providerSpec.diskSize"},
		{`{"image":"x","uri":"::"}`, "providerSpec.uri"},
		{`{"image":"x","shutdownGracePeriod":"soon"}`, "providerSpec.shutdownGracePeriod"},
		{`{"image":"x","network":{"name":"default","user":{}}}`, "providerSpec.network"},
		{`{"image":"x","network":{"user":{"guestForwards":[{"guest":"192.168.1.1:80","host":"127.0.0.1:80"}]}}}`, "providerSpec.network.user.guestForwards[0].guest"},
		{`{"image":"x","network":{"user":{"guestForwards":[{"guest":"10.0.2.100:6443","host":"127.0.0.1"}]}}}`, "providerSpec.network.user.guestForwards[0].host"},
		// The host goes into QEMU's option (a comma would end it) and the
		// relay's command (a space would split it).
		{`{"image":"x","network":{"user":{"guestForwards":[{"guest":"10.0.2.100:6443","host":"a,b:80"}]}}}`, "providerSpec.network.user.guestForwards[0].host"},
		{`{"image":"x","network":{"user":{"guestForwards":[{"guest":"10.0.2.100:6443","host":"a b:80"}]}}}`, "providerSpec.network.user.guestForwards[0].host"},
	} {
		_, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: machine("invalid"), MachineClass: class("invalid", tc.spec)})
		if driver.CodeOf(err) != driver.InvalidArgument || !strings.HasPrefix(driver.MessageOf(err), tc.field+": ") {
			t.Errorf("spec %s: %v; want InvalidArgument naming %s", tc.spec, err, tc.field)
		}
	}
	if names := volumes(t, libvirtConn(t), domainPrefix); len(names) != 0 {
		t.Errorf("refused creates left volumes: %v", names)
	}
}

// TestRestartFindsItsDomains checks that a new driver instance (a restarted
// millwright-libvirt) finds the domain an earlier one made, and makes no
// second.
func TestRestartFindsItsDomains(t *testing.T) {
	cl := class("restart", imageSpec())
	m := machine("restart")
	first, err := newDriver(t).CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl})
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(t)
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}) })
	again, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl})
	if err != nil {
		t.Fatal(err)
	}
	if again.ProviderID != first.ProviderID {
		t.Fatalf("after a restart CreateMachine returned %q, before %q", again.ProviderID, first.ProviderID)
	}
	list, err := d.ListMachines(ctx(t), &driver.ListMachinesRequest{MachineClass: cl})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{first.ProviderID: m.Name}; !mapsEqual(list.MachineNames(), want) {
		t.Fatalf("ListMachines after a restart: %v; want %v", list.MachineNames(), want)
	}
	if _, err := d.GetMachineStatus(ctx(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatalf("GetMachineStatus after a restart: %v", err)
	}
	other, err := d.ListMachines(ctx(t), &driver.ListMachinesRequest{MachineClass: class("restart-other", imageSpec())})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.MachineNames()[first.ProviderID]; ok {
		t.Fatalf("ListMachines of another class lists %s", first.ProviderID)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestForeignDomainIsNeverTouched defines a domain without Millwright's
// metadata under the very name a Machine would get, and checks that no
// list shows it and neither create nor delete changes it.
func TestForeignDomainIsNeverTouched(t *testing.T) {
	l := libvirtConn(t)
	m := machine("foreign")
	name := domainName(m)
	x, err := (&libvirtxml.Domain{
		Type: "qemu", Name: name, Memory: &libvirtxml.DomainMemory{Value: 128, Unit: "MiB"},
		OS: &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Type: "hvm"}},
	}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dom, err := l.DomainDefineXMLFlags(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.DomainUndefine(dom) })
	before, err := l.DomainGetXMLDesc(dom, golibvirt.DomainXMLInactive)
	if err != nil {
		t.Fatal(err)
	}

	d := newDriver(t)
	cl := class("foreign", imageSpec())
	list, err := d.ListMachines(ctx(t), &driver.ListMachinesRequest{MachineClass: cl})
	if err != nil {
		t.Fatal(err)
	}
	for id, machine := range list.MachineNames() {
		if strings.HasSuffix(id, "/"+name) || machine == m.Name {
			t.Errorf("ListMachines lists the foreign domain: %s -> %s", id, machine)
		}
	}
	_, err = d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl})
	if driver.CodeOf(err) != driver.FailedPrecondition {
		t.Errorf("CreateMachine over a foreign domain: %v; want FailedPrecondition", err)
	}
	_, err = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl})
	if driver.CodeOf(err) != driver.FailedPrecondition {
		t.Errorf("DeleteMachine of a foreign domain: %v; want FailedPrecondition", err)
	}
	after, err := l.DomainGetXMLDesc(dom, golibvirt.DomainXMLInactive)
	if err != nil {
		t.Fatalf("the foreign domain is gone: %v", err)
	}
	if after != before {
		t.Errorf("the foreign domain changed:\n%s\nwas\n%s", after, before)
	}
	if active, err := l.DomainIsActive(dom); err != nil || active != 0 {
		t.Errorf("the foreign domain was started (active %d, %v)", active, err)
	}
}

// TestDeleteLeavesNothing checks a deletion removes the domain, its seed
// and disk volumes and its console log, and that the domain was persistent
// and running before.
func TestDeleteLeavesNothing(t *testing.T) {
	l := libvirtConn(t)
	d := newDriver(t)
	cl := class("delete", imageSpec())
	m := machine("delete")
	name := domainName(m)
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	dom, err := l.DomainLookupByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if persistent, err := l.DomainIsPersistent(dom); err != nil || persistent != 1 {
		t.Errorf("the domain is not persistent (%d, %v): it would not survive a libvirtd restart", persistent, err)
	}
	if active, err := l.DomainIsActive(dom); err != nil || active != 1 {
		t.Errorf("the domain is not running after CreateMachine (%d, %v)", active, err)
	}
	want := []string{diskVolume(name), seedVolume(name), stateVolume(name)}
	if got := volumes(t, l, name); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("volumes after create: %v; want %v", got, want)
	}
	log := ConsoleLog(fixture.consoleDir, name)
	testenv.Eventually(t, timeoutBoot, "the console log to exist", func() (bool, error) {
		_, err := os.Stat(log)
		return err == nil, nil
	})
	if _, err := d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	if domainExists(t, l, name) {
		t.Error("the domain exists after DeleteMachine")
	}
	if got := volumes(t, l, name); len(got) != 0 {
		t.Errorf("volumes after delete: %v", got)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("the console log is still there after delete (%v)", err)
	}
}

// TestSeed checks the seed a VM is given: a read-only virtio disk with
// serial cidata, holding an ISO 9660 image labelled cidata with the user
// data as given and the meta-data a VM's init reads; and its state disk:
// writable, raw, on virtio, with the serial the node agent finds it by,
// zeroed (no state) on a new domain.
func TestSeed(t *testing.T) {
	l := libvirtConn(t)
	d := newDriver(t)
	cl := class("seed", imageSpec())
	m := machine("seed")
	name := domainName(m)
	userData := []byte("#!/bin/sh\necho 'hello from user data'\n")
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}) })
	resp, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{
		Machine: m, MachineClass: cl,
		Secret: &corev1.Secret{Data: map[string][]byte{"userData": userData}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dom, err := l.DomainLookupByName(name)
	if err != nil {
		t.Fatal(err)
	}
	x, err := l.DomainGetXMLDesc(dom, 0)
	if err != nil {
		t.Fatal(err)
	}
	var def libvirtxml.Domain
	if err := def.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	var seed *libvirtxml.DomainDisk
	for i, disk := range def.Devices.Disks {
		if disk.Serial == SeedLabel {
			seed = &def.Devices.Disks[i]
		}
	}
	switch {
	case seed == nil:
		t.Fatalf("no disk with serial %s in\n%s", SeedLabel, x)
	case seed.ReadOnly == nil || seed.Target.Bus != "virtio" || seed.Driver.Type != "raw":
		t.Errorf("the seed disk is not a read-only raw virtio disk:\n%s", x)
	}
	if StateSerial != nodeagent.StateSerial {
		t.Fatalf("the state disk's serial %q is not the one the node agent looks for (%q)", StateSerial, nodeagent.StateSerial)
	}
	var state *libvirtxml.DomainDisk
	for i, disk := range def.Devices.Disks {
		if disk.Serial == StateSerial {
			state = &def.Devices.Disks[i]
		}
	}
	switch {
	case state == nil:
		t.Errorf("no disk with serial %s in\n%s", StateSerial, x)
	case state.ReadOnly != nil || state.Target.Bus != "virtio" || state.Driver.Type != "raw" || state.Source.Volume == nil || state.Source.Volume.Volume != stateVolume(name):
		t.Errorf("the state disk is not a writable raw virtio disk of volume %s:\n%s", stateVolume(name), x)
	}

	pool, err := l.StoragePoolLookupByName(fixture.pool)
	if err != nil {
		t.Fatal(err)
	}
	vol, err := l.StorageVolLookupByName(pool, seedVolume(name))
	if err != nil {
		t.Fatal(err)
	}
	iso := readVolume(t, l, vol)
	if sv, err := l.StorageVolLookupByName(pool, stateVolume(name)); err != nil {
		t.Error(err)
	} else if data := readVolume(t, l, sv); len(data) != stateVolumeSize || !bytes.Equal(data, make([]byte, stateVolumeSize)) {
		t.Errorf("the new state volume is %d bytes, not %d zeroes", len(data), stateVolumeSize)
	}
	img, err := iso9660.OpenImage(bytes.NewReader(iso))
	if err != nil {
		t.Fatal(err)
	}
	if label, err := img.Label(); err != nil || label != SeedLabel {
		t.Errorf("seed label %q (%v); want %q", label, err, SeedLabel)
	}
	root, err := img.RootDir()
	if err != nil {
		t.Fatal(err)
	}
	kids, err := root.GetChildren()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, k := range kids {
		data, err := io.ReadAll(k.Reader())
		if err != nil {
			t.Fatal(err)
		}
		// ISO 9660 names carry a version (";1"), which Linux hides.
		files[strings.TrimSuffix(k.Name(), ";1")] = data
	}
	if !bytes.Equal(files["user-data"], userData) {
		t.Errorf("user-data is %q; want %q (files: %v)", files["user-data"], userData, keys(files))
	}
	var meta map[string]string
	if err := yaml.Unmarshal(files["meta-data"], &meta); err != nil {
		t.Fatalf("meta-data %q: %v", files["meta-data"], err)
	}
	want := map[string]string{"instance-id": string(m.UID), "local-hostname": m.Name, "provider-id": resp.ProviderID}
	if !mapsEqual(meta, want) {
		t.Errorf("meta-data is %v; want %v", meta, want)
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestDeleteByProviderID checks the orphan collector's DeleteMachine: a
// Machine known only by its name and providerID (its object is gone, so
// no UID). The providerID names the domain; a name that is not the one in
// the domain's metadata is refused and the domain left alone; the right
// one deletes it.
func TestDeleteByProviderID(t *testing.T) {
	l := libvirtConn(t)
	d := newDriver(t)
	cl := class("orphan", imageSpec())
	m := machine("orphan")
	name := domainName(m)
	resp, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl})
	if err != nil {
		t.Fatal(err)
	}
	ghost := func(machineName string) *v1alpha1.Machine {
		g := &v1alpha1.Machine{}
		g.Name, g.Namespace, g.Spec.ProviderID = machineName, m.Namespace, resp.ProviderID
		return g
	}
	_, err = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: ghost("someone-else"), MachineClass: cl})
	if driver.CodeOf(err) != driver.FailedPrecondition || !domainExists(t, l, name) {
		t.Fatalf("deleting by providerID for another Machine's name: %v, domain exists %t; want FailedPrecondition and the domain kept", err, domainExists(t, l, name))
	}
	if _, err := d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: ghost(m.Name), MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	if domainExists(t, l, name) {
		t.Error("the domain exists after DeleteMachine by providerID")
	}
	if got := volumes(t, l, name); len(got) != 0 {
		t.Errorf("volumes after delete: %v", got)
	}
}

// readVolume reads a whole volume from its file: the test's pool is a
// directory on this host. Not through StorageVolDownload: CI saw
// go-libvirt's download stream end early once (the ISO then failed to
// parse with EOF) and hang once, while the upload the driver uses is what
// this test is about.
func readVolume(t *testing.T, l *golibvirt.Libvirt, vol golibvirt.StorageVol) []byte {
	t.Helper()
	path, err := l.StorageVolGetPath(vol)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestStoppedDomainIsNotReadAsNeverStarted: libvirt forgets why a domain
// is shut off when libvirtd restarts (the reason reads "unknown", as for a
// domain defined and never started). A domain the driver started once is
// still reported stopped (FailedPrecondition, so the Machine fails), not
// NotFound (which would make the Machine controller start it again); a
// domain a create defined and never started is still NotFound. The
// restart is simulated by defining the stopped domain anew from its
// definition, which is how libvirtd loads it at start.
func TestStoppedDomainIsNotReadAsNeverStarted(t *testing.T) {
	l := libvirtConn(t)
	d := newDriver(t)
	cl := class("started", imageSpec())
	m := machine("started")
	name := domainName(m)
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}) })
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	dom, err := l.DomainLookupByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DomainDestroy(dom); err != nil {
		t.Fatal(err)
	}
	x, err := l.DomainGetXMLDesc(dom, golibvirt.DomainXMLInactive)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DomainUndefineFlags(dom, 0); err != nil {
		t.Fatal(err)
	}
	if dom, err = l.DomainDefineXML(x); err != nil {
		t.Fatal(err)
	}
	if state, reason, err := l.DomainGetState(dom, 0); err != nil || golibvirt.DomainState(state) != golibvirt.DomainShutoff || golibvirt.DomainShutoffReason(reason) != golibvirt.DomainShutoffUnknown {
		t.Fatalf("the redefined domain is in state %d reason %d (%v), want shut off for an unknown reason", state, reason, err)
	}
	_, err = d.GetMachineStatus(ctx(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: cl})
	if driver.CodeOf(err) != driver.FailedPrecondition {
		t.Errorf("GetMachineStatus of a started domain shut off for an unknown reason: %v, want FailedPrecondition", err)
	}

	// Defined by a create that stopped before the start.
	never := machine("never")
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: never, MachineClass: cl}) })
	c, err := d.conns.get(ctx(t), DefaultURI)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.classSpec(cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.define(ctx(t), c, s, &driver.CreateMachineRequest{Machine: never, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}
	_, err = d.GetMachineStatus(ctx(t), &driver.GetMachineStatusRequest{Machine: never, MachineClass: cl})
	if driver.CodeOf(err) != driver.NotFound {
		t.Errorf("GetMachineStatus of a domain defined and never started: %v, want NotFound", err)
	}
}
