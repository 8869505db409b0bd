package libvirt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// probeTimeout is the tests' KVM probe bound: a working KVM boots the
// kernel in a few seconds, and a hung one is given up on sooner than the
// default.
const probeTimeout = 20 * time.Second

// createWhenProbed calls CreateMachine until it answers something else than
// Aborted (the probe is running), and returns that.
func createWhenProbed(t *testing.T, d *Driver, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	t.Helper()
	var resp *driver.CreateMachineResponse
	var err error
	testenv.Eventually(t, timeoutBoot, "CreateMachine to stop answering Aborted", func() (bool, error) {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err = d.CreateMachine(c, req)
		return driver.CodeOf(err) != driver.Aborted, nil
	})
	return resp, err
}

// TestAutoDomainTypeBoots checks domainType auto: CreateMachine does not
// block while the KVM probe runs (it answers Aborted before its deadline;
// OK only where a KVM guest booted within it, which nested KVM here never
// does, so on these machines the check is Aborted), the probe reaches a
// verdict, the domain has the verdict's type, and a VM of that type boots
// its kernel (a wrong "kvm" where KVM guests hang would not).
func TestAutoDomainTypeBoots(t *testing.T) {
	d := New(Options{Policy: testPolicy(), ConsoleDir: fixture.consoleDir, ProbeTimeout: probeTimeout})
	t.Cleanup(d.Close)
	spec := fmt.Sprintf(`{"memory":"128Mi","domainType":"auto","kernel":%q,"initramfs":%q,"pool":%q,"shutdownGracePeriod":"0s"}`,
		testKernel(t), emptyInitramfs(t, fixture.dir), fixture.pool)
	cl := class("auto", spec)
	m := machine("auto")
	req := &driver.CreateMachineRequest{Machine: m, MachineClass: cl}
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}) })

	// A probe domain a driver killed mid-probe left running: the next
	// probe destroys it (leftovers checks at the end). A probe another
	// driver instance started a moment ago is running: it stays.
	startProbeDomain := func(name string) golibvirt.Domain {
		x, err := probeXML(name, testKernel(t), filepath.Join(fixture.dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		dom, err := libvirtConn(t).DomainCreateXML(strings.Replace(x, `type="kvm"`, `type="qemu"`, 1), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = libvirtConn(t).DomainDestroy(dom) })
		return dom
	}
	startProbeDomain(probeName(time.Now().Add(-time.Hour)))
	another := startProbeDomain(probeName(time.Now()))

	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := d.CreateMachine(short, req); err != nil && driver.CodeOf(err) != driver.Aborted {
		t.Fatalf("CreateMachine while the probe runs: %v; want OK or Aborted", err)
	}
	if _, err := createWhenProbed(t, d, req); err != nil {
		t.Fatal(err)
	}
	verdict, ok := d.KVMVerdict(DefaultURI)
	if !ok || verdict.Why == "" {
		t.Fatalf("no KVM verdict after the create (%+v, %v)", verdict, ok)
	}
	t.Logf("KVM verdict: %+v", verdict)
	if active, err := libvirtConn(t).DomainIsActive(another); err != nil || active != 1 {
		t.Fatalf("the probe another driver instance had just started was destroyed (active %d, %v)", active, err)
	}
	if err := libvirtConn(t).DomainDestroy(another); err != nil {
		t.Fatal(err)
	}
	want := DomainTypeQEMU
	if verdict.KVM {
		want = DomainTypeKVM
	}
	if got := domainType(t, domainName(m)); got != want {
		t.Fatalf("the domain's type is %s; the verdict says %s", got, want)
	}
	testenv.Eventually(t, timeoutBoot, "the VM's kernel to finish booting", func() (bool, error) {
		return strings.Contains(d.ConsoleTail(m, 50), probeBooted), nil
	})
	leftovers(t)
}

// TestAutoDomainTypeKernelThatDoesNotStart checks a probe whose KVM guest
// does not even start (its kernel is no kernel) ends in the verdict qemu.
func TestAutoDomainTypeKernelThatDoesNotStart(t *testing.T) {
	d := New(Options{Policy: testPolicy(), ConsoleDir: fixture.consoleDir, ProbeTimeout: probeTimeout})
	t.Cleanup(d.Close)
	junk := filepath.Join(fixture.dir, "not-a-kernel")
	if err := os.WriteFile(junk, []byte("not a kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := class("auto-junk", fmt.Sprintf(`{"domainType":"auto","kernel":%q,"pool":%q}`, junk, fixture.pool))
	m := machine("auto-junk")
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}) })
	_, _ = createWhenProbed(t, d, &driver.CreateMachineRequest{Machine: m, MachineClass: cl})
	verdict, ok := d.KVMVerdict(DefaultURI)
	if !ok || verdict.KVM {
		t.Fatalf("KVM verdict %+v (known: %v); want qemu", verdict, ok)
	}
	if !strings.Contains(verdict.Why, "does not start") && !strings.Contains(verdict.Why, "offers no KVM") {
		t.Errorf("the verdict says %q; want that the KVM guest did not start (or there is no KVM)", verdict.Why)
	}
	leftovers(t)
}

// domainType is the type of a domain, as libvirt has it.
func domainType(t *testing.T, name string) string {
	t.Helper()
	l := libvirtConn(t)
	dom, err := l.DomainLookupByName(name)
	if err != nil {
		t.Fatal(err)
	}
	x, err := l.DomainGetXMLDesc(dom, golibvirt.DomainXMLInactive)
	if err != nil {
		t.Fatal(err)
	}
	var def libvirtxml.Domain
	if err := def.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	return def.Type
}

// leftovers fails the test if a probe domain is still there.
func leftovers(t *testing.T) {
	t.Helper()
	doms, _, err := libvirtConn(t).ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsInactive)
	if err != nil {
		t.Fatal(err)
	}
	for _, dom := range doms {
		if strings.HasPrefix(dom.Name, probePrefix) {
			t.Errorf("the probe domain %s is left behind", dom.Name)
		}
	}
}
