package e2e

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket/dialers"
	"libvirt.org/go/libvirtxml"

	"github.com/millwright-dev/millwright/internal/logtail"
	"github.com/millwright-dev/millwright/internal/provider/libvirt"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// vmAPIServerIP is where the VMs reach the shared cluster's API server:
// their network is restricted, and this address of it is forwarded, one
// relay per connection, to the API server on the host's loopback
// (docs/providers/libvirt.md, "The network").
var vmAPIServerIP = net.IPv4(10, 0, 2, 100)

// vmHostIP is the host as QEMU's user-mode network shows it to a guest:
// without restrict, a guest's connection to it reaches the host's
// loopback, the API server included. The VMs' network is restricted, so
// TestVMNeverJoins's VMs, told to join there, must not reach it.
var vmHostIP = net.IPv4(10, 0, 2, 2)

// qemuPIDDir is where libvirt's QEMU driver (qemu:///system) keeps the pid
// file of each running domain.
const qemuPIDDir = "/run/libvirt/qemu"

// vmWorld is the libvirt side of a VM scenario: a connection of the
// test's own to libvirt, millwright-libvirt's health address, and a
// storage pool (transient, in dir/pool) and console directory of the
// scenario's own. dir is readable by QEMU, which runs as libvirt's
// unprivileged user.
type vmWorld struct {
	l                 *golibvirt.Libvirt
	ns                string
	dir, consoleDir   string
	pool              string
	health            string
	kernel, initramfs string
	// driverArgs are millwright-libvirt's flags.
	driverArgs []string
	// images are the volumes the scenario put in its pool itself (a cloud
	// image's disk, cloudImageSpec): no Machine's, so never "left".
	images []string
}

// newVMScenario creates namespace name and starts millwright-libvirt for
// it, with its own pool and console directory (driverFlags after the
// defaults), and waits until it answers. At the end of the test,
// once the scenario's processes are stopped, the cleanup destroys and
// undefines whatever domain of the scenario is left, so that a failed test
// leaves no VM running, and removes the pool.
func newVMScenario(t testing.TB, name string, driverFlags ...string) *scenario {
	t.Helper()
	s := beginScenario(t, name, "libvirt")
	dir, err := os.MkdirTemp("", "mw-e2e-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	w := &vmWorld{ns: name, dir: dir, consoleDir: filepath.Join(dir, "console"), pool: "mwe2e-" + name,
		kernel: filepath.Join(binDir, "vm", "vmlinuz"), initramfs: filepath.Join(binDir, "vm", "initramfs.img")}
	s.vm = w
	for _, d := range []string{dir, w.consoleDir, filepath.Join(dir, "pool")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// QEMU runs as libvirt's unprivileged user: it boots copies in the
	// scenario's directory, which it can reach wherever the repository is.
	for _, f := range []*string{&w.kernel, &w.initramfs} {
		data, err := os.ReadFile(*f)
		if err != nil {
			t.Fatalf("%v: run `make tools` (hack/tools/vm.sh builds the VMs' kernel and initramfs)", err)
		}
		*f = filepath.Join(dir, filepath.Base(*f))
		if err := os.WriteFile(*f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.connect(); err != nil {
		t.Fatalf("connecting to libvirt: %v", err)
	}
	if err := w.removeDomainsAndPool(func(d domain) {
		t.Logf("removing domain %s of Machine %s, left by an earlier run", d.name, d.meta.Name)
	}); err != nil {
		t.Fatalf("listing the domains an earlier run left: %v", err)
	}
	x, _ := (&libvirtxml.StoragePool{Type: "dir", Name: w.pool, Target: &libvirtxml.StoragePoolTarget{Path: filepath.Join(dir, "pool")}}).Marshal()
	if _, err := w.l.StoragePoolCreateXML(x, 0); err != nil {
		t.Fatalf("creating the scenario's storage pool: %v", err)
	}

	s.driver = "libvirt-" + name
	s.socket = "unix://" + filepath.Join(cluster.Dir(), name+"-libvirt.sock")
	w.health = testenv.FreeAddr(t)
	// What the scenario's classes use of the host, and no more: the boot
	// files in its directory, the API server as the one forward target.
	w.driverArgs = append([]string{"--endpoint", s.socket, "--health-address", w.health, "--console-dir", w.consoleDir,
		"--boot-file-dir", dir, "--allowed-forward", "127.0.0.1:" + apiServerPort()}, driverFlags...)
	s.startLibvirtDriver()
	return s
}

// connect (re)connects the test's own connection to libvirt, as after a
// restart of libvirtd.
func (w *vmWorld) connect() error {
	l := golibvirt.NewWithDialer(dialers.NewLocal(dialers.WithLocalTimeout(5 * time.Second)))
	if err := l.ConnectToURI(golibvirt.QEMUSystem); err != nil {
		return err
	}
	w.l = l
	return nil
}

// startLibvirtDriver starts millwright-libvirt with the scenario's flags
// and waits until it serves /healthz.
func (s *scenario) startLibvirtDriver() {
	s.t.Helper()
	s.start(s.driver, "millwright-libvirt", s.vm.driverArgs)
	s.eventually(time.Minute, "millwright-libvirt to serve /healthz", func() (bool, error) {
		code, body, err := testenv.HTTPGet("http://" + s.vm.health + "/healthz")
		if err == nil && code != 200 {
			err = fmt.Errorf("/healthz %d: %s", code, body)
		}
		return err == nil, err
	})
}

// driverReadyz is millwright-libvirt's /readyz: its status code and body.
func (w *vmWorld) driverReadyz() (int, string, error) {
	return testenv.HTTPGet("http://" + w.health + "/readyz")
}

// vmSpec is the providerSpec of the scenario's VMs: the node agent's
// kernel and initramfs booted directly under TCG, 1 vCPU, memory as
// given, on QEMU's user-mode network restricted to one guest forward:
// vmAPIServerIP at the API server's port to the API server on the host's
// loopback.
func (w *vmWorld) vmSpec(memory string) string {
	return fmt.Sprintf(`{"cpus":1,"memory":%q,"domainType":"qemu","kernel":%q,"initramfs":%q,"cmdline":"console=ttyS0 panic=-1","pool":%q,"shutdownGracePeriod":"30s","network":{"user":%s}}`,
		memory, w.kernel, w.initramfs, w.pool, vmNetwork())
}

// vmNetwork is the VMs' user-mode network (network.user of vmSpec).
func vmNetwork() string {
	port := apiServerPort()
	return fmt.Sprintf(`{"restrict":true,"guestForwards":[{"guest":"%s:%s","host":"127.0.0.1:%s"}]}`, vmAPIServerIP, port, port)
}

// apiServerPort is the shared cluster's API server port on the host's
// loopback.
func apiServerPort() string {
	u, err := url.Parse(cluster.APIServerURL())
	if err != nil {
		panic(err) // the cluster's own URL
	}
	return u.Port()
}

// domain is one of the scenario's domains.
type domain struct {
	name   string
	meta   libvirt.Meta
	active bool
}

// errNotConnected: the scenario's setup ended before it connected to
// libvirt, so nothing in libvirt is the scenario's.
var errNotConnected = errors.New("the scenario never connected to libvirt")

// domains lists the domains whose Millwright metadata names the
// scenario's namespace.
func (w *vmWorld) domains() ([]domain, error) {
	if w.l == nil {
		return nil, errNotConnected
	}
	doms, _, err := w.l.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsInactive)
	if err != nil {
		return nil, err
	}
	var out []domain
	for _, d := range doms {
		x, err := w.l.DomainGetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{libvirt.MetadataNamespace}, golibvirt.DomainAffectConfig)
		if err != nil {
			continue // not Millwright's, or deleted meanwhile
		}
		var m libvirt.Meta
		if err := xml.Unmarshal([]byte(x), &m); err != nil {
			return nil, fmt.Errorf("domain %s: %w", d.Name, err)
		}
		if m.Namespace != w.ns {
			continue
		}
		active, err := w.l.DomainIsActive(d)
		if err != nil {
			continue // deleted meanwhile
		}
		out = append(out, domain{name: d.Name, meta: m, active: active == 1})
	}
	return out, nil
}

// vms describes the scenario's domains as the sim's VMs, for the helpers
// both kinds of scenario share.
func (w *vmWorld) vms() ([]sim.VM, error) {
	doms, err := w.domains()
	if err != nil {
		return nil, err
	}
	out := make([]sim.VM, 0, len(doms))
	for _, d := range doms {
		vm := sim.VM{ID: d.name, Namespace: d.meta.Namespace, MachineName: d.meta.Name, ClassName: d.meta.ClassName, NodeName: d.meta.NodeName}
		if d.active {
			vm.State = sim.VMRunning
		}
		out = append(out, vm)
	}
	return out, nil
}

// domainOf returns the domain of a Machine.
func (w *vmWorld) domainOf(machine string) (domain, error) {
	doms, err := w.domains()
	if err != nil {
		return domain{}, err
	}
	for _, d := range doms {
		if d.meta.Name == machine {
			return d, nil
		}
	}
	return domain{}, fmt.Errorf("no domain for Machine %s", machine)
}

// killQEMU kills a running domain's QEMU with SIGKILL, behind libvirt's
// back, as the OOM killer would.
func (w *vmWorld) killQEMU(name string) error {
	pid, err := qemuPID(name)
	if err != nil {
		return err
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// setLink sets the link of a running domain's network up or down through
// QEMU's monitor, as a pulled cable or a partitioned network would: the
// VM runs on, and every connection it has or opens goes nowhere. The
// user-mode network is passed to QEMU directly, not as a libvirt
// <interface> (docs/providers/libvirt.md, "The network"), so libvirt's
// own link setting does not reach it.
func (w *vmWorld) setLink(name string, up bool) error {
	d, err := w.l.DomainLookupByName(name)
	if err != nil {
		return err
	}
	state := map[bool]string{true: "on", false: "off"}[up]
	out, err := w.l.QEMUDomainMonitorCommand(d, "set_link "+libvirt.UserNetdevID+" "+state, qemuMonitorHMP)
	if err == nil && strings.TrimSpace(out) != "" {
		err = fmt.Errorf("set_link: %s", strings.TrimSpace(out))
	}
	return err
}

// qemuMonitorHMP is VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP: the command is
// the human monitor's, not QMP's JSON.
const qemuMonitorHMP = 1

// qemuPID is the pid of a running domain's QEMU, from libvirt's pid file.
func qemuPID(name string) (int, error) {
	data, err := os.ReadFile(filepath.Join(qemuPIDDir, name+".pid"))
	if err != nil {
		return 0, fmt.Errorf("the pid of domain %s: %w", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("the pid file of domain %s: %w", name, err)
	}
	return pid, nil
}

// qemuProcesses lists the pids of the QEMU processes of the scenario's
// VMs: those whose command line names a file of its directory (the seed
// disk in its pool).
func (w *vmWorld) qemuProcesses() []int {
	return testenv.Pids(func(cmd []byte) bool {
		return bytes.Contains(cmd, []byte("qemu-system")) && bytes.Contains(cmd, []byte(w.dir+"/"))
	})
}

// relayProcesses lists the pids of the relays QEMU runs for the VMs'
// connections to the API server: millwright-libvirt (bin's) relay
// --vm DOMAIN --max-connections N 127.0.0.1:<its port>. Only one VM
// scenario runs at a time, so they are the scenario's.
func relayProcesses() []int {
	prefix := []byte(filepath.Join(binDir, "millwright-libvirt") + "\x00" + libvirt.RelayCommand + "\x00--vm\x00")
	suffix := []byte("\x00127.0.0.1:" + apiServerPort() + "\x00")
	return testenv.Pids(func(cmd []byte) bool { return bytes.HasPrefix(cmd, prefix) && bytes.HasSuffix(cmd, suffix) })
}

// volumes lists the volumes of the scenario's pool but its own images.
func (w *vmWorld) volumes() ([]string, error) {
	pool, err := w.l.StoragePoolLookupByName(w.pool)
	if err != nil {
		return nil, err
	}
	if err := w.l.StoragePoolRefresh(pool, 0); err != nil {
		return nil, err
	}
	vols, _, err := w.l.StoragePoolListAllVolumes(pool, 1, 0)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, v := range vols {
		if !slices.Contains(w.images, v.Name) {
			names = append(names, v.Name)
		}
	}
	return names, nil
}

// consoleTail is the last lines of a domain's console log.
func (w *vmWorld) consoleTail(name string, lines int) string {
	return logtail.Tail(libvirt.ConsoleLog(w.consoleDir, name), lines)
}

// cleanup destroys and undefines the scenario's domains (logging their
// consoles' tails if the test failed), then removes its pool and directory.
func (w *vmWorld) cleanup(t testing.TB) {
	if w.l == nil { // never connected (errNotConnected): only the directory is the scenario's
		_ = os.RemoveAll(w.dir)
		return
	}
	if !w.l.IsConnected() { // libvirtd was restarted
		if err := w.connect(); err != nil {
			t.Errorf("reconnecting to libvirt for the cleanup: %v", err)
			return
		}
	}
	if err := w.removeDomainsAndPool(func(d domain) {
		if t.Failed() {
			t.Logf("--- console of %s (Machine %s), last 30 lines ---\n%s", d.name, d.meta.Name, w.consoleTail(d.name, 30))
		}
	}); err != nil {
		t.Errorf("listing the scenario's domains: %v", err)
	}
	_ = w.l.Disconnect()
	_ = os.RemoveAll(w.dir)
}

// removeDomainsAndPool destroys and undefines the domains of the
// scenario's namespace, calling before on each first, and removes its pool
// with its volumes. At the start of a scenario it removes what a run
// killed mid-way left in libvirtd (a CI run once failed on them).
func (w *vmWorld) removeDomainsAndPool(before func(domain)) error {
	doms, err := w.domains()
	for _, d := range doms {
		before(d)
		dom, err := w.l.DomainLookupByName(d.name)
		if err != nil {
			continue
		}
		if d.active {
			_ = w.l.DomainDestroy(dom)
		}
		// Persistent definitions too (/etc/libvirt/qemu), with whatever
		// managed save or snapshot metadata would make a plain undefine fail.
		_ = w.l.DomainUndefineFlags(dom, golibvirt.DomainUndefineManagedSave|golibvirt.DomainUndefineSnapshotsMetadata|golibvirt.DomainUndefineNvram)
	}
	if pool, err := w.l.StoragePoolLookupByName(w.pool); err == nil {
		if vols, _, err := w.l.StoragePoolListAllVolumes(pool, 1, 0); err == nil {
			for _, v := range vols {
				_ = w.l.StorageVolDelete(v, 0)
			}
		}
		_ = w.l.StoragePoolDestroy(pool)
		_ = w.l.StoragePoolUndefine(pool) // a persistent pool, defined by hand
	}
	return err
}

// defineDomain defines (and does not start) a small domain named name,
// with Millwright's metadata meta, or none when meta is nil: someone
// else's domain. Such a domain costs no CPU.
func (w *vmWorld) defineDomain(t testing.TB, name string, meta *libvirt.Meta) {
	t.Helper()
	dom := &libvirtxml.Domain{
		Type: "qemu", Name: name,
		Memory: &libvirtxml.DomainMemory{Value: 128, Unit: "MiB"},
		OS:     &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Type: "hvm"}},
	}
	if meta != nil {
		var x strings.Builder
		if err := xml.NewEncoder(&x).EncodeElement(meta, xml.StartElement{Name: xml.Name{Space: libvirt.MetadataNamespace, Local: "machine"}}); err != nil {
			t.Fatal(err)
		}
		dom.Metadata = &libvirtxml.DomainMetadata{XML: x.String()}
	}
	x, err := dom.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.l.DomainDefineXML(x); err != nil {
		t.Fatalf("defining domain %s: %v", name, err)
	}
}

// domainExists reports whether libvirt has a domain of that name.
func (w *vmWorld) domainExists(name string) (bool, error) {
	_, err := w.l.DomainLookupByName(name)
	if err == nil {
		return true, nil
	}
	if golibvirt.IsNotFound(err) {
		return false, nil
	}
	return false, err
}

// undefine removes a domain the test defined.
func (w *vmWorld) undefine(name string) {
	if dom, err := w.l.DomainLookupByName(name); err == nil {
		_ = w.l.DomainUndefine(dom)
	}
}

// shutdowns reads the deletions' outcome from the log of the driver
// process named driver: how many ACPI shutdowns it asked, how many times
// it pressed the power button again (a guest that missed a press), the
// seconds each guest took to power itself off, and, for each guest it destroyed
// after the grace period, its domain and the console's last lines the
// driver logged then (internal/provider/libvirt's log lines; the console
// log itself is deleted with the domain).
func (w *vmWorld) shutdowns(t *testing.T, driver string) (asked, repressed int, shutDown []float64, destroyed []string) {
	t.Helper()
	out, err := os.ReadFile(cluster.LogPath(driver))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.Contains(line, "asked the guest to shut down"):
			asked++
		case strings.Contains(line, "pressed the ACPI power button again"):
			repressed++
		case strings.Contains(line, "the guest shut down after the ACPI shutdown"):
			if strings.Contains(line, " pressesRepeated=") {
				t.Logf("--- %s missed a press; last lines of its console ---\n%s", logValue(line, "domain"), logValue(line, "consoleTail"))
			}
			_, after, _ := strings.Cut(line, " seconds=")
			secs, _ := strconv.ParseFloat(strings.Fields(after + " ")[0], 64)
			shutDown = append(shutDown, secs)
		case strings.Contains(line, "did not shut down within the grace period"):
			dom, tail := logValue(line, "domain"), logValue(line, "consoleTail")
			destroyed = append(destroyed, fmt.Sprintf("--- %s: last lines of its console ---\n%s", dom, tail))
		}
	}
	return asked, repressed, shutDown, destroyed
}

// logValue is the value of key in a line of slog's text format (quoted
// when it has spaces or newlines), or "(none)".
func logValue(line, key string) string {
	_, v, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		return "(none)"
	}
	if q, err := strconv.QuotedPrefix(v); err == nil {
		v, _ = strconv.Unquote(q)
		return v
	}
	return strings.Fields(v + " ")[0]
}
