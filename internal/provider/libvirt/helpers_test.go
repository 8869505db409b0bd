package libvirt

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"libvirt.org/go/libvirtxml"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/libvirtd"
	"github.com/millwright-dev/millwright/internal/relay"
	"github.com/millwright-dev/millwright/internal/repo"
)

// These tests run real domains on the host's qemu:///system, as root: the
// libvirt daemons are started for the run when they are not running
// (internal/libvirtd), and a test fails, never skips, when they cannot be.
// The VMs are kept cheap: 128Mi, and most boot nothing (SeaBIOS finds an
// empty disk and idles), so a run costs little CPU.

// fixture is what every test shares: a storage pool of its own in a
// temporary directory, holding an empty base image, and a console
// directory.
var fixture struct {
	dir        string // readable by QEMU, unlike t.TempDir()
	pool       string
	image      string
	consoleDir string
}

// timeoutBoot bounds waiting for something a booting VM does: generous, as
// TCG on a shared CPU is slow.
const timeoutBoot = 2 * time.Minute

func TestMain(m *testing.M) {
	// QEMU runs a copy of this binary as a guest forward's relay
	// (TestGuestForwardRelaysEachConnection): relay --vm DOMAIN
	// --max-connections N HOST.
	if len(os.Args) > 2 && os.Args[1] == RelayCommand {
		if g, err := relay.Stdio(); err == nil {
			_ = relay.Run(context.Background(), g, os.Args[len(os.Args)-1])
		}
		os.Exit(0)
	}
	os.Exit(libvirtd.Main(m, setUpFixture))
}

func setUpFixture(dir string) (func(), error) {
	c, err := dial(DefaultURI, nil)
	if err != nil {
		return nil, err
	}
	defer c.l.Disconnect()
	fixture.dir = dir
	fixture.pool = fmt.Sprintf("mwtest-%06d", rand.IntN(1_000_000))
	fixture.consoleDir = filepath.Join(dir, "console")
	if err := os.Mkdir(fixture.consoleDir, 0o755); err != nil {
		return nil, err
	}
	poolDir := filepath.Join(dir, "pool")
	if err := os.Mkdir(poolDir, 0o755); err != nil {
		return nil, err
	}
	x, _ := (&libvirtxml.StoragePool{Type: "dir", Name: fixture.pool, Target: &libvirtxml.StoragePoolTarget{Path: poolDir}}).Marshal()
	pool, err := c.l.StoragePoolCreateXML(x, 0) // transient: gone when destroyed
	if err != nil {
		return nil, err
	}
	cleanup := func() {
		c, err := dial(DefaultURI, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "removing the test pool:", err)
			return
		}
		defer c.l.Disconnect()
		if vols, _, err := c.l.StoragePoolListAllVolumes(pool, 1, 0); err == nil {
			for _, v := range vols {
				_ = c.l.StorageVolDelete(v, 0)
			}
		}
		_ = c.l.StoragePoolDestroy(pool)
	}
	fixture.image = "base.qcow2"
	vx, _ := (&libvirtxml.StorageVolume{
		Name:     fixture.image,
		Capacity: &libvirtxml.StorageVolumeSize{Value: 16, Unit: "MiB"},
		Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "qcow2"}},
	}).Marshal()
	if _, err := c.l.StorageVolCreateXML(pool, vx, 0); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}

// newDriver returns a driver logging consoles into the fixture's directory.
func newDriver(t testing.TB) *Driver {
	d := New(Options{Policy: testPolicy(), ConsoleDir: fixture.consoleDir})
	t.Cleanup(d.Close)
	return d
}

// imageSpec is a providerSpec whose VMs boot the fixture's empty image.
func imageSpec() string {
	return fmt.Sprintf(`{"memory":"128Mi","image":%q,"pool":%q,"shutdownGracePeriod":"1s"}`, fixture.image, fixture.pool)
}

func class(name, spec string) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1alpha1.MachineClassSpec{Provider: DefaultName, ProviderSpec: runtime.RawExtension{Raw: []byte(spec)}},
	}
}

func machine(name string) *v1alpha1.Machine {
	return &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%s-%06d", name, rand.IntN(1_000_000)))},
	}
}

// libvirtConn is a connection of the test's own, to look at libvirt
// without the driver.
func libvirtConn(t testing.TB) *golibvirt.Libvirt {
	t.Helper()
	c, err := dial(DefaultURI, nil)
	if err != nil {
		t.Fatalf("connecting to libvirt: %v", err)
	}
	t.Cleanup(func() { _ = c.l.Disconnect() })
	return c.l
}

// volumes returns the names of the fixture pool's volumes starting with prefix.
func volumes(t *testing.T, l *golibvirt.Libvirt, prefix string) []string {
	t.Helper()
	pool, err := l.StoragePoolLookupByName(fixture.pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StoragePoolRefresh(pool, 0); err != nil {
		t.Fatal(err)
	}
	vols, _, err := l.StoragePoolListAllVolumes(pool, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vols {
		if strings.HasPrefix(v.Name, prefix) {
			names = append(names, v.Name)
		}
	}
	return names
}

// domainExists reports whether libvirt has a domain of that name.
func domainExists(t *testing.T, l *golibvirt.Libvirt, name string) bool {
	t.Helper()
	_, err := l.DomainLookupByName(name)
	if isCode(err, golibvirt.ErrNoDomain) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// repoFile is a path in the repository.
func repoFile(t testing.TB, rel string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// testPolicy lets the tests' classes boot the files in the fixture's
// directory and forward guests to the host's loopback.
func testPolicy() Policy {
	return Policy{BootFileDirs: []string{fixture.dir}, AllowedForwards: []string{"127.0.0.1"}}
}
