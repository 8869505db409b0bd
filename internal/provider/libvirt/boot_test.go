package libvirt

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// kernelEnv names a kernel for the boot test; default the repository's
// bin/vm/vmlinuz, which `make tools` fetches.
const kernelEnv = "MILLWRIGHT_VM_KERNEL"

// testKernel returns the kernel to boot, failing the test when there is none.
func testKernel(t testing.TB) string {
	t.Helper()
	k := os.Getenv(kernelEnv)
	if k == "" {
		k = repoFile(t, "bin/vm/vmlinuz")
	}
	if _, err := os.Stat(k); err != nil {
		t.Fatalf("no kernel to boot (%v): run `make tools`, or set %s to a Linux kernel image", err, kernelEnv)
	}
	return qemuReadable(t, k, "vmlinuz")
}

// qemuReadable returns a copy of the file src in the fixture's directory.
// QEMU runs as libvirt's unprivileged user: it boots a copy there, which
// it can reach wherever the repository is. Written once, to a name of its
// own per source, renamed into place: a VM booting meanwhile never reads
// a half-written file.
func qemuReadable(t testing.TB, src, prefix string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(fixture.dir, fmt.Sprintf("%s-%x", prefix, sha256.Sum256([]byte(src))))
	if _, err := os.Stat(copied); err == nil {
		return copied
	}
	tmp, err := os.CreateTemp(fixture.dir, prefix+"-*")
	if err != nil {
		t.Fatal(err)
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Chmod(0o644), tmp.Close(), os.Rename(tmp.Name(), copied)); err != nil {
		t.Fatal(err)
	}
	return copied
}

// emptyInitramfs writes an initramfs holding nothing (a newc cpio archive
// of just its trailer): the kernel boots, finds no /init and no root, and
// panics, which is all this test needs a guest to do.
func emptyInitramfs(t testing.TB, dir string) string {
	t.Helper()
	var b bytes.Buffer
	const name = "TRAILER!!!\x00"
	fmt.Fprintf(&b, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s",
		0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, len(name), 0, name)
	for b.Len()%512 != 0 {
		b.WriteByte(0)
	}
	p := filepath.Join(dir, "initramfs.img")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKernelBootConsoleAndNetwork boots a kernel directly, on a restricted
// user-mode network with a guest forward, and checks: a driver without a
// relay binary refuses the class; the console reaches its log through
// virtlogd; QEMU got the restricted network with the forward's relay
// command and no seccomp sandbox (which would forbid running the relay);
// and once the VM is off, GetMachineStatus fails quoting the console. The
// guest (a kernel that panics) opens no connection: the e2e's VMs show
// the relays carry them (docs/providers/libvirt.md, "The network").
func TestKernelBootConsoleAndNetwork(t *testing.T) {
	kernel := testKernel(t)
	initramfs := emptyInitramfs(t, fixture.dir)
	const host = "127.0.0.1:6443"
	spec := fmt.Sprintf(`{"memory":"128Mi","kernel":%q,"initramfs":%q,"cmdline":"console=ttyS0","pool":%q,
		"shutdownGracePeriod":"0s","network":{"user":{"restrict":true,"guestForwards":[{"guest":"10.0.2.100:6443","host":%q}]}}}`,
		kernel, initramfs, fixture.pool, host)
	cl := class("boot", spec)
	m := machine("boot")
	_, err := newDriver(t).CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl})
	if driver.CodeOf(err) != driver.FailedPrecondition || !strings.HasPrefix(driver.MessageOf(err), "providerSpec.network.user.guestForwards: ") {
		t.Errorf("a create by a driver without a relay binary: %v; want FailedPrecondition naming the guest forwards", err)
	}

	// Any program will do as the relay: the guest never connects.
	const relay = "/bin/true"
	d := New(Options{Policy: testPolicy(), ConsoleDir: fixture.consoleDir, RelayBinary: relay})
	t.Cleanup(d.Close)
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}) })
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatal(err)
	}

	l := libvirtConn(t)
	dom, err := l.DomainLookupByName(domainName(m))
	if err != nil {
		t.Fatal(err)
	}
	args := qemuArgs(t, domainName(m))
	if want := " user,id=" + UserNetdevID + ",restrict=on,guestfwd=tcp:10.0.2.100:6443-cmd:" + relay + " relay --vm " + domainName(m) + " --max-connections 32 " + host + " "; !strings.Contains(args, want) {
		t.Errorf("QEMU's command line lacks %q:\n%s", want, args)
	}
	if strings.Contains(args, "-sandbox") {
		t.Errorf("QEMU runs with a seccomp sandbox, which forbids spawning the relay:\n%s", args)
	}

	const panicked = "end Kernel panic"
	testenv.Eventually(t, timeoutBoot, "the kernel's panic on the console", func() (bool, error) {
		return strings.Contains(d.ConsoleTail(m, 50), panicked), nil
	})
	if !strings.Contains(d.ConsoleTail(m, 500), "Linux version") {
		t.Errorf("the console lacks the kernel's banner:\n%s", d.ConsoleTail(m, 500))
	}
	if _, err := d.GetMachineStatus(ctx(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: cl}); err != nil {
		t.Fatalf("GetMachineStatus of the running VM: %v", err)
	}

	if err := l.DomainDestroy(dom); err != nil {
		t.Fatal(err)
	}
	_, err = d.GetMachineStatus(ctx(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: cl})
	if driver.CodeOf(err) != driver.FailedPrecondition || !strings.Contains(driver.MessageOf(err), panicked) {
		t.Fatalf("GetMachineStatus of the stopped VM: %v; want FailedPrecondition quoting the console", err)
	}
}

// qemuArgs returns the command line of the QEMU process running a domain.
func qemuArgs(t *testing.T, name string) string {
	t.Helper()
	pidFile := "/var/run/libvirt/qemu/" + name + ".pid"
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("QEMU's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(cmdline), "\x00", " ")
}

// TestGuestForwardRelaysEachConnection boots the node agent (bin/vm) on a
// restricted network whose one guest forward leads to a listener of the
// test that answers no TLS: the agent's bootstrap fails and it retries,
// each time on a new connection, so the listener accepting two proves
// QEMU ran a relay per connection (one byte stream would be one
// connection). The relay is this test binary (TestMain runs the relay
// subcommand), copied where QEMU can execute it. Once the VM is deleted,
// no relay is left.
func TestGuestForwardRelaysEachConnection(t *testing.T) {
	kernel := testKernel(t)
	initramfs := qemuReadable(t, repoFile(t, "bin/vm/initramfs.img"), "initramfs")
	relayBin := testRelayBinary(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	guest := "10.0.2.100:" + port

	d := New(Options{Policy: testPolicy(), ConsoleDir: fixture.consoleDir, RelayBinary: relayBin})
	t.Cleanup(d.Close)
	cl := class("relay", fmt.Sprintf(`{"memory":"256Mi","domainType":"qemu","kernel":%q,"initramfs":%q,"cmdline":"console=ttyS0 panic=-1","pool":%q,"shutdownGracePeriod":"0s",
		"network":{"user":{"restrict":true,"guestForwards":[{"guest":%q,"host":%q}]}}}`, kernel, initramfs, fixture.pool, guest, lis.Addr().String()))
	m := machine("relay")
	del := &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}
	t.Cleanup(func() { _, _ = d.DeleteMachine(ctx(t), del) })
	if _, err := d.CreateMachine(ctx(t), &driver.CreateMachineRequest{Machine: m, MachineClass: cl, Secret: userDataFor(t, m.Name, "https://"+guest)}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case c := <-accepted:
			c.Close() // no TLS: the agent retries on a new connection
		case <-time.After(timeoutBoot):
			t.Fatalf("the listener accepted %d connections from the guest, want 2; console:\n%s", i, d.ConsoleTail(m, 30))
		}
	}
	// Held open while the VM goes: its relay must not outlive it.
	var held net.Conn
	select {
	case held = <-accepted:
		defer held.Close()
	case <-time.After(timeoutBoot):
		t.Fatalf("no third connection from the guest; console:\n%s", d.ConsoleTail(m, 30))
	}
	if _, err := d.DeleteMachine(ctx(t), del); err != nil {
		t.Fatal(err)
	}
	_ = held.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.Copy(io.Discard, held); err != nil {
		t.Errorf("the connection of the deleted VM did not end: %v", err)
	}
	held.Close()
	want := relayBin + "\x00" + RelayCommand + "\x00" + lis.Addr().String() + "\x00"
	testenv.Eventually(t, time.Minute, "no relay left after the VM's deletion", func() (bool, error) {
		if pids := processesWithCmdline(want); len(pids) > 0 {
			return false, fmt.Errorf("relays %v", pids)
		}
		return true, nil
	})
}

// testRelayBinary is a copy of this test binary, which runs the relay
// when its first argument is the relay subcommand (TestMain), in the
// fixture's directory, where QEMU (libvirt's unprivileged user) can
// execute it.
func testRelayBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(fixture.dir, "relay-test")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// processesWithCmdline lists the pids whose command line is cmdline (its
// words each ended by a NUL).
func processesWithCmdline(cmdline string) []int {
	return testenv.Pids(func(cmd []byte) bool { return string(cmd) == cmdline })
}
