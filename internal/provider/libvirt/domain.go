package libvirt

import (
	"crypto/sha1"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"libvirt.org/go/libvirtxml"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// MetadataNamespace is the XML namespace of Millwright's element in a
// domain's <metadata>. A domain without that element is not Millwright's:
// the driver never lists, changes or deletes it.
const MetadataNamespace = "https://millwright.dev/xmlns/libvirt/machine/v1"

// domainPrefix starts the name of every domain the driver makes.
const domainPrefix = "mw-"

// Meta is the Millwright metadata of a domain: which Machine it was made
// for and from which class.
type Meta struct {
	Namespace      string `xml:"namespace"`
	Name           string `xml:"name"`
	UID            string `xml:"uid"`
	ClassNamespace string `xml:"classNamespace"`
	ClassName      string `xml:"className"`
	NodeName       string `xml:"nodeName"`
	// ConsoleLog is the file the serial console is written to.
	ConsoleLog string `xml:"consoleLog"`
	// Volumes are the pool/volume names made for this domain alone, which
	// its deletion removes.
	Volumes []MetaVolume `xml:"volume"`
	// Started is when CreateMachine first started the domain (RFC 3339),
	// empty before. libvirt forgets why a domain is shut off when libvirtd
	// restarts (the reason reads "unknown", as for a domain never started):
	// this tells a VM that ran and stopped from one a create left defined.
	Started string `xml:"started,omitempty"`
	// ShutdownRequested is when a deletion first asked the running guest
	// to shut down (RFC 3339, the driver's clock), empty before. The grace
	// period counts from it across deletion calls and driver restarts: a
	// later call destroys the domain once it is over, never waits anew.
	ShutdownRequested string `xml:"shutdownRequested,omitempty"`
}

// MetaVolume names a volume of a pool.
type MetaVolume struct {
	Pool string `xml:"pool,attr"`
	Name string `xml:"name,attr"`
}

// ofClass reports whether the domain was made from class.
func (m *Meta) ofClass(class *v1alpha1.MachineClass) bool {
	return m.ClassNamespace == class.Namespace && m.ClassName == class.Name
}

func parseMeta(s string) (*Meta, error) {
	var m Meta
	if err := xml.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("reading Millwright's metadata: %w", err)
	}
	return &m, nil
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// domainName is the one domain name of a Machine: derived from its UID, so
// every create of the Machine, by any driver instance, finds the same
// domain, and a new Machine of the same name gets a new domain.
func domainName(m *v1alpha1.Machine) string {
	return domainPrefix + unsafeName.ReplaceAllString(string(m.UID), "_")
}

// domainUUID is the domain's libvirt UUID, derived from its name: defining
// the same domain twice updates it instead of making a second.
func domainUUID(name string) string {
	return uuid.NewHash(sha1.New(), uuid.NameSpaceURL, []byte(MetadataNamespace+"/"+name), 5).String()
}

// volume names of a domain.
func seedVolume(domain string) string  { return domain + "-seed.iso" }
func diskVolume(domain string) string  { return domain + "-disk.qcow2" }
func stateVolume(domain string) string { return domain + "-state.img" }

// StateSerial is the serial of the state disk, by which the node agent
// finds it (docs/providers/libvirt.md).
const StateSerial = "millwright-state"

// stateVolumeSize is the state volume's size: the node agent keeps its
// record of a few KiB in two slots, at 0 and at 512 KiB
// (docs/providers/libvirt.md).
const stateVolumeSize = 1 << 20

// ConsoleLog is where the serial console of domain is written in dir (the
// driver's --console-dir), on the libvirt host.
func ConsoleLog(dir, domain string) string { return filepath.Join(dir, domain+"-console.log") }

// QEMULog is libvirt's own log of domain in dir (the driver's
// --qemu-log-dir), on the libvirt host.
func QEMULog(dir, domain string) string { return filepath.Join(dir, domain+".log") }

// UserNetdevID names the user-mode netdev passed to QEMU directly: the
// name QEMU's monitor knows it by (`set_link mwnet0 off` cuts a VM off
// its network while it runs; the e2e chaos run does).
const UserNetdevID = "mwnet0"

// metaXML is meta as the element of Millwright's namespace.
func metaXML(meta *Meta) (string, error) {
	var b strings.Builder
	if err := xml.NewEncoder(&b).EncodeElement(meta, xml.StartElement{Name: xml.Name{Space: MetadataNamespace, Local: "machine"}}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// domainXML is the definition of a Machine's domain. relay is how QEMU
// runs a guest forward's relay.
func domainXML(name, virtType string, s *spec, meta *Meta, hasDisk bool, relay relayCmd) (string, error) {
	// Written in MetadataNamespace (libvirt keeps no element without
	// one); libvirt hands it back without, so Meta names none.
	mx, err := metaXML(meta)
	if err != nil {
		return "", err
	}
	dom := &libvirtxml.Domain{
		Type:     virtType,
		Name:     name,
		UUID:     domainUUID(name),
		Metadata: &libvirtxml.DomainMetadata{XML: mx},
		Memory:   &libvirtxml.DomainMemory{Value: uint(s.memoryKiB), Unit: "KiB"},
		VCPU:     &libvirtxml.DomainVCPU{Value: uint(s.CPUs)},
		OS: &libvirtxml.DomainOS{
			Type: &libvirtxml.DomainOSType{Type: "hvm", Arch: "x86_64", Machine: "pc"},
		},
		Features: &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}},
		// A guest that powers off is shut off, not restarted: the Machine
		// reports it. A reboot (a node's own) restarts the VM.
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "destroy",
		Devices:    &libvirtxml.DomainDeviceList{},
	}
	if s.Kernel != "" {
		dom.OS.Kernel = s.Kernel
		dom.OS.Initrd = s.Initramfs
		dom.OS.Cmdline = s.Cmdline
		if dom.OS.Cmdline == "" {
			dom.OS.Cmdline = "console=ttyS0"
		}
	}
	devs := dom.Devices
	if hasDisk {
		devs.Disks = append(devs.Disks, libvirtxml.DomainDisk{
			Device: "disk",
			Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
			Source: &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{Pool: s.Pool, Volume: diskVolume(name)}},
			Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
			Boot:   &libvirtxml.DomainDeviceBoot{Order: 1},
		})
	}
	// The seed: read-only, raw, on virtio, with the serial the VM's init
	// finds it by (docs/providers/libvirt.md).
	devs.Disks = append(devs.Disks, libvirtxml.DomainDisk{
		Device:   "disk",
		Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
		Source:   &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{Pool: s.Pool, Volume: seedVolume(name)}},
		Target:   &libvirtxml.DomainDiskTarget{Dev: "vdb", Bus: "virtio"},
		ReadOnly: &libvirtxml.DomainDiskReadOnly{},
		Serial:   SeedLabel,
	})
	// The state disk: small, raw, writable; the node agent keeps what must
	// survive a reboot on it (its credentials, its version).
	devs.Disks = append(devs.Disks, libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
		Source: &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{Pool: s.Pool, Volume: stateVolume(name)}},
		Target: &libvirtxml.DomainDiskTarget{Dev: "vdc", Bus: "virtio"},
		Serial: StateSerial,
	})
	port := uint(0)
	devs.Serials = []libvirtxml.DomainSerial{{
		Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
		Target: &libvirtxml.DomainSerialTarget{Port: &port},
		// Through virtlogd: the file outlives the QEMU process, so a VM
		// that died can still be read.
		Log: &libvirtxml.DomainChardevLog{File: meta.ConsoleLog, Append: "off"},
	}}
	// No USB, no balloon: nothing a node needs, and less for TCG to emulate.
	devs.Controllers = []libvirtxml.DomainController{{Type: "usb", Model: "none"}}
	devs.MemBalloon = &libvirtxml.DomainMemBalloon{Model: "none"}
	devs.RNGs = []libvirtxml.DomainRNG{{Model: "virtio", Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}}}}
	addNetwork(dom, s.Network, func(host string) string { return relay.command(name, host) })
	return dom.Marshal()
}

// addNetwork attaches the VM's NIC. A user-mode network that is
// restricted or forwards guest ports cannot be said in libvirt's
// <interface> (9.0 has neither restrict nor guestfwd), so it is passed to
// QEMU on its command line, through libvirt's QEMU namespace. Guest
// forwards also take QEMU's seccomp sandbox away, for this domain alone:
// with it (spawn=deny) QEMU could not run the relay of each connection
// (docs/providers/libvirt.md, "The network").
// No network in the spec is a restricted user-mode network: an
// unrestricted one reaches every service on the libvirt host's loopback.
// relay is the command of a guest forward's connection to a host address.
func addNetwork(dom *libvirtxml.Domain, n *NetworkSpec, relay func(host string) string) {
	if n == nil {
		n = &NetworkSpec{User: &UserNetwork{}}
	}
	virtio := &libvirtxml.DomainInterfaceModel{Type: "virtio"}
	switch {
	case n.Name != "":
		dom.Devices.Interfaces = []libvirtxml.DomainInterface{{
			Source: &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: n.Name}},
			Model:  virtio,
		}}
	case n.User != nil && (n.User.restricted() || len(n.User.GuestForwards) > 0):
		dom.QEMUCommandline = &libvirtxml.DomainQEMUCommandline{Args: []libvirtxml.DomainQEMUCommandlineArg{
			{Value: "-netdev"}, {Value: userNetdev(n.User, relay)},
			// At the last slot of the i440fx root bus: libvirt, which does
			// not know of this device, allocates the slots from 2 upwards.
			{Value: "-device"}, {Value: "virtio-net-pci,netdev=" + UserNetdevID + ",bus=pci.0,addr=0x1f"},
		}}
		if len(n.User.GuestForwards) > 0 {
			dom.QEMUCapabilities = &libvirtxml.DomainQEMUCapabilities{
				Del: []libvirtxml.DomainQEMUCapabilitiesEntry{{Name: seccompSandboxCapability}},
			}
		}
	default:
		dom.Devices.Interfaces = []libvirtxml.DomainInterface{{
			Source: &libvirtxml.DomainInterfaceSource{User: &libvirtxml.DomainInterfaceSourceUser{}},
			Model:  virtio,
		}}
	}
}

// seccompSandboxCapability is libvirt's name of QEMU's -sandbox option:
// without it, libvirt passes no -sandbox to this domain's QEMU.
const seccompSandboxCapability = "seccomp-sandbox"

// userNetdev is QEMU's -netdev value for a user-mode network. Each guest
// forward runs the relay command per connection: QEMU splits the command
// into words (no shell), and its option syntax ends the value at a comma,
// which the spec's and the relay binary's checks keep out.
func userNetdev(u *UserNetwork, relay func(host string) string) string {
	parts := []string{"user", "id=" + UserNetdevID}
	if u.restricted() {
		parts = append(parts, "restrict=on")
	}
	for _, f := range u.GuestForwards {
		parts = append(parts, "guestfwd=tcp:"+f.Guest+"-cmd:"+relay(f.Host))
	}
	return strings.Join(parts, ",")
}
