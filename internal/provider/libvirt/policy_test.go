package libvirt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// writeBootFile writes a file named name in the fixture's directory, the
// tests' boot file directory, and returns its path.
func writeBootFile(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(fixture.dir, name)
	if err := os.WriteFile(path, []byte("not a kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPolicyRefusesWhatTheHostDidNotGive: a class is a tenant's; it gets
// the libvirt daemons, boot files and host addresses the driver's flags
// list and nothing else, each refusal an InvalidArgument naming the field,
// and a refused file outside the boot directories is refused alike
// whether or not it exists (no oracle of the host's files). Nothing is
// created for a refused class.
func TestPolicyRefusesWhatTheHostDidNotGive(t *testing.T) {
	d := newDriver(t)
	pool := fmt.Sprintf("%q", fixture.pool)
	image := fmt.Sprintf("%q", fixture.image)
	link := filepath.Join(fixture.dir, "link-out")
	_ = os.Remove(link)
	if err := os.Symlink("/etc/hostname", link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ spec, field, says string }{
		{`{"uri":"qemu+tcp://10.0.0.1/system","image":` + image + `,"pool":` + pool + `}`, "providerSpec.uri", "--allowed-uri"},
		{`{"uri":"qemu:///system?socket=/run/other.sock","image":` + image + `,"pool":` + pool + `}`, "providerSpec.uri", "--allowed-uri"},
		{`{"kernel":"/etc/hostname"}`, "providerSpec.kernel", "--boot-file-dir"},
		{`{"kernel":"/etc/no-such-file"}`, "providerSpec.kernel", "--boot-file-dir"},
		{`{"kernel":` + fmt.Sprintf("%q", fixture.dir+"/../../etc/hostname") + `}`, "providerSpec.kernel", "--boot-file-dir"},
		{`{"kernel":` + fmt.Sprintf("%q", link) + `}`, "providerSpec.kernel", "leads out"},
		{`{"kernel":` + fmt.Sprintf("%q", writeBootFile(t, "k")) + `,"initramfs":"/etc/hostname"}`, "providerSpec.initramfs", "--boot-file-dir"},
		{`{"image":"mw-0c4e-seed.iso","pool":` + pool + `}`, "providerSpec.image", "Machines' own"},
		{`{"image":` + image + `,"pool":` + pool + `,"network":{"user":{"restrict":false}}}`, "providerSpec.network.user.restrict", "--allow-unrestricted-network"},
		{`{"image":` + image + `,"pool":` + pool + `,"network":{"user":{"restrict":false,"guestForwards":[{"guest":"10.0.2.100:80","host":"127.0.0.1:80"}]}}}`, "providerSpec.network.user.restrict", "guestForwards"},
		{`{"image":` + image + `,"pool":` + pool + `,"network":{"user":{"guestForwards":[{"guest":"10.0.2.100:2379","host":"10.9.9.9:2379"}]}}}`, "providerSpec.network.user.guestForwards[0].host", "--allowed-forward"},
	} {
		_, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: machine("refused"), MachineClass: class("refused", tc.spec)})
		msg := driver.MessageOf(err)
		if driver.CodeOf(err) != driver.InvalidArgument || !strings.HasPrefix(msg, tc.field+": ") || !strings.Contains(msg, tc.says) {
			t.Errorf("spec %s: %v; want InvalidArgument naming %s and saying %q", tc.spec, err, tc.field, tc.says)
		}
	}
	if names := volumes(t, libvirtConn(t), domainPrefix); len(names) != 0 {
		t.Errorf("refused creates left volumes: %v", names)
	}
}

// TestNoNetworkIsRestricted: a class that names no network gets QEMU's
// user-mode network restricted, whose guest reaches nothing on the host;
// libvirt's own <interface type="user"> cannot restrict and reaches the
// host's loopback.
func TestNoNetworkIsRestricted(t *testing.T) {
	for _, raw := range []string{`{"kernel":"/k"}`, `{"kernel":"/k","network":{}}`, `{"kernel":"/k","network":{"user":{}}}`} {
		s, err := decodeSpec([]byte(raw), DefaultURI)
		if err != nil {
			t.Fatal(err)
		}
		x, err := domainXML("mw-x", DomainTypeQEMU, s, &Meta{Name: "x"}, false, relayCmd{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(x, "user,id=mwnet0,restrict=on") || strings.Contains(x, `<interface type="user">`) {
			t.Fatalf("a class with %s: want the restricted user network; the domain:\n%s", raw, x)
		}
	}
}
