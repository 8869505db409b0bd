//go:build qemu && linux

// The boot test needs qemu-system-x86_64 and bin/vm from `make tools`, so
// it is behind the qemu build tag, outside `make test`:
//
//	go test -tags qemu -count=1 -v -run TestBoot ./internal/vminit/
package vminit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/provider/tokenbootstrap"
	"github.com/millwright-dev/millwright/internal/repo"
)

// QEMU user networking (not restricted) forwards the guest's connections
// to its gateway, 10.0.2.2, to the host's loopback: one per connection,
// which the agent needs (guestfwd's tcp: form carries a single stream).
const hostFromGuest = "10.0.2.2"

// TestBoot boots bin/vm/vmlinuz and bin/vm/initramfs.img under QEMU (TCG)
// with a NoCloud seed the TokenBootstrapConfig provider's user data is
// in, against a local cluster, and checks that the VM's Node registers and
// becomes Ready through an auto-approved CSR, then that an ACPI power-button
// press makes it NotReady and powers the VM off. It logs the timings.
func TestBoot(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	kernel, initrd := filepath.Join(root, "bin/vm/vmlinuz"), filepath.Join(root, "bin/vm/initramfs.img")
	for _, f := range []string{kernel, initrd} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: run `make tools`", err)
		}
	}
	ctx := t.Context()
	c, err := localcluster.Start(ctx, localcluster.Options{APIServerExtraIPs: []net.IP{net.ParseIP(hostFromGuest)}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())

	const node, providerID = "boot-vm", "millwright-libvirt://default/boot-vm"
	id := bootstraptoken.ID(types.UID("uid-" + node))
	secret, err := bootstraptoken.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	tokenSecret := bootstraptoken.Build(bootstraptoken.Spec{ID: id, Secret: secret, Expiration: time.Now().Add(time.Hour), Description: "boot test"})
	if _, err := cs.CoreV1().Secrets(tokenSecret.Namespace).Create(ctx, tokenSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(strings.TrimPrefix(c.APIServerURL(), "https://"), ":")
	ud, err := tokenbootstrap.UserData(tokenbootstrap.JoinData{
		Server: "https://" + hostFromGuest + ":" + port, CA: c.RESTConfig().CAData,
		Token: bootstraptoken.Token(id, secret), NodeName: node,
	})
	if err != nil {
		t.Fatal(err)
	}
	md := fmt.Sprintf("instance-id: uid-%s\nlocal-hostname: %s\nprovider-id: %s\n", node, node, providerID)
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.iso")
	writeSeed(t, seed, ud, []byte(md))

	monitor := filepath.Join(dir, "monitor.sock")
	begin := time.Now()
	startQEMU := func(name, seed, monitor string) {
		t.Helper()
		err := c.StartProcess(ctx, name, "qemu-system-x86_64",
			"-machine", "accel=tcg", "-m", "512", "-smp", "1", "-nographic", "-no-reboot",
			"-kernel", kernel, "-initrd", initrd, "-append", "console=ttyS0 panic=-1",
			"-drive", "file="+seed+",if=none,id=seed,format=raw,readonly=on",
			"-device", "virtio-blk-pci,drive=seed,serial=cidata",
			"-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0",
			"-monitor", "unix:"+monitor+",server,nowait")
		if err != nil {
			t.Fatal(err)
		}
	}
	startQEMU("qemu", seed, monitor)
	console := c.LogPath("qemu")
	poll := func(what string, bound time.Duration, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, bound, true, func(ctx context.Context) (bool, error) {
			if exited, err := c.ProcessExited("qemu"); exited && what != "QEMU to exit" {
				return false, fmt.Errorf("QEMU exited: %v", err)
			}
			return cond(ctx)
		})
		if err != nil {
			out, _ := os.ReadFile(console)
			t.Fatalf("waiting for %s: %v\n--- console ---\n%s", what, err, out)
		}
		t.Logf("%s after %.1fs", what, time.Since(begin).Seconds())
	}

	poll("the CSR to be approved and issued", 3*time.Minute, func(ctx context.Context) (bool, error) {
		csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, r := range csrs.Items {
			if r.Spec.Username == "system:bootstrap:"+id && len(r.Status.Certificate) > 0 {
				for _, cond := range r.Status.Conditions {
					if cond.Type == "Approved" && cond.Reason == "AutoApproved" {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
	var n *corev1.Node
	poll("the Node to be Ready", time.Minute, func(ctx context.Context) (bool, error) {
		n, err = cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && readyStatus(n) == corev1.ConditionTrue, nil
	})
	if n.Spec.ProviderID != providerID || !strings.HasSuffix(n.Status.NodeInfo.KernelVersion, "cloud-amd64") {
		t.Errorf("Node: providerID %q, kernel %q", n.Spec.ProviderID, n.Status.NodeInfo.KernelVersion)
	}
	if len(n.Status.Addresses) == 0 || n.Status.Addresses[0].Address != "10.0.2.15" {
		t.Errorf("Node addresses %v, want InternalIP 10.0.2.15 (from QEMU's DHCP)", n.Status.Addresses)
	}
	if rss, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.PIDs()["qemu"])); err == nil {
		for line := range strings.Lines(string(rss)) {
			if strings.HasPrefix(line, "VmRSS:") {
				t.Logf("QEMU %s", strings.TrimSpace(line))
			}
		}
	}

	// What `virsh shutdown` does.
	monitorCommand(t, monitor, "system_powerdown")
	begin = time.Now()
	poll("QEMU to exit", time.Minute, func(context.Context) (bool, error) {
		exited, _ := c.ProcessExited("qemu")
		return exited, nil
	})
	n, err = cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if readyStatus(n) != corev1.ConditionFalse {
		t.Errorf("after power-off the Node's Ready is %s, want False (NodeAgentStopped)", readyStatus(n))
	}
	if out, _ := os.ReadFile(console); !bytes.Contains(out, []byte("reboot: Power down")) {
		t.Errorf("the console does not show a power-off:\n%s", out)
	}

	// A seed the agent cannot join with (no provider-id): the agent
	// exits, and pid 1 powers the VM off rather than exiting too, which
	// would panic the kernel.
	bad := filepath.Join(dir, "bad-seed.iso")
	writeSeed(t, bad, ud, []byte("instance-id: uid-bad\nlocal-hostname: "+node+"\n"))
	startQEMU("qemu-bad", bad, filepath.Join(dir, "monitor-bad.sock"))
	begin = time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		exited, _ := c.ProcessExited("qemu-bad")
		return exited, nil
	}); err != nil {
		t.Fatalf("the VM with a bad seed did not power off: %v", err)
	}
	t.Logf("the VM with a bad seed powered off after %.1fs", time.Since(begin).Seconds())
	out, _ := os.ReadFile(c.LogPath("qemu-bad"))
	if !bytes.Contains(out, []byte("no provider-id")) || !bytes.Contains(out, []byte("reboot: Power down")) || bytes.Contains(out, []byte("Kernel panic")) {
		t.Errorf("the console of the VM with a bad seed does not show the agent's error and a clean power-off:\n%s", out)
	}
}

// monitorCommand runs a command on QEMU's human monitor: after its
// prompt, and waiting for the next one, since QEMU drops a command whose
// connection closes before it has read it.
func monitorCommand(t *testing.T, socket, command string) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(conn)
	prompt := func() {
		var seen []byte
		for !bytes.HasSuffix(seen, []byte("(qemu) ")) {
			b, err := r.ReadByte()
			if err != nil {
				t.Fatalf("QEMU monitor: %v (read %q)", err, seen)
			}
			seen = append(seen, b)
		}
	}
	prompt()
	if _, err := conn.Write([]byte(command + "\n")); err != nil {
		t.Fatal(err)
	}
	prompt()
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
