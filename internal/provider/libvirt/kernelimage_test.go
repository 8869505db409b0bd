package libvirt

import (
	"testing"

	"libvirt.org/go/libvirtxml"
)

// TestKernelBootsImage checks a class with both kernel and image defines a
// domain that boots the kernel directly with the image's overlay as vda
// (how a cloud image without a bootloader boots; docs/providers/libvirt.md).
// Pure: the domain XML only.
func TestKernelBootsImage(t *testing.T) {
	s, err := decodeSpec([]byte(`{"kernel":"/k","initramfs":"/i","cmdline":"console=ttyS0 root=/dev/vda","image":"debian"}`), DefaultURI)
	if err != nil {
		t.Fatal(err)
	}
	x, err := domainXML("mw-x", DomainTypeQEMU, s, &Meta{Name: "x"}, true, relayCmd{})
	if err != nil {
		t.Fatal(err)
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	if dom.OS.Kernel != "/k" || dom.OS.Initrd != "/i" || dom.OS.Cmdline != "console=ttyS0 root=/dev/vda" {
		t.Errorf("direct kernel boot lost: kernel %q initrd %q cmdline %q", dom.OS.Kernel, dom.OS.Initrd, dom.OS.Cmdline)
	}
	d := dom.Devices.Disks[0]
	if d.Target == nil || d.Target.Dev != "vda" || d.Source == nil || d.Source.Volume == nil || d.Source.Volume.Volume != diskVolume("mw-x") {
		t.Errorf("the image's overlay is not vda:\n%s", x)
	}
}
