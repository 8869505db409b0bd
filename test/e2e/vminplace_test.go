package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/libvirt"
)

// TestVMInPlaceReboot proves the node side of an in-place update on a
// real VM (docs/in-place-updates.md, "The node side"): a libvirt domain
// booting the node agent joins with its Machine's spec.version as its
// kubeletVersion; the test labels its Node update=ready with a newer
// version the API server allows (what the machine controller does once
// it has drained the Node); the agent records the version on the
// domain's state volume and reboots the guest with reboot(2). Then:
//
//   - the guest really rebooted: its boot ID changed and the console log
//     shows pid 1 starting twice, while the domain's QEMU process is the
//     same one (libvirt's on_reboot restart resets the guest in place);
//   - the Node reports the new version, Ready, update=succeeded, with the
//     same providerID: the agent rejoined with the credentials kept on the
//     state volume (the bootstrap token was deleted after the first join);
//   - scaling to 0 leaves no volume (the state volume goes with the domain).
//
// It logs the seconds from the label to update=succeeded (reboot and
// rejoin under TCG).
func TestVMInPlaceReboot(t *testing.T) {
	s := newVMScenario(t, "vminplace")
	s.startManager("--token-bootstrap-api-server", vmAPIServer(t))
	s.createVMClass("small", smallVM)
	s.createTokenBootstrapTemplate("join")
	sv, err := kubernetes.NewForConfigOrDie(cluster.RESTConfig()).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	server := version.MustParseGeneric(sv.GitVersion)
	oldV := fmt.Sprintf("v%d.%d.1", server.Major(), server.Minor()-1)
	newV := fmt.Sprintf("v%d.%d.2", server.Major(), server.Minor())
	spec := vmMachineSpec("small", "join")
	spec.Version = oldV
	s.createDeploymentOf(1, spec, 1, 0)

	m := s.waitFleet(1, "small", 10*time.Minute)[0]
	s.checkJoinedThroughCSR([]v1alpha1.Machine{m}) // and its token deleted
	ctx := context.Background()
	name := nodeOf(&m)
	node := &corev1.Node{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	if node.Status.NodeInfo.KubeletVersion != oldV {
		t.Errorf("Node %s reports kubeletVersion %q, want its Machine's spec.version %s", name, node.Status.NodeInfo.KubeletVersion, oldV)
	}
	bootID := node.Status.NodeInfo.BootID
	dom, err := s.vm.domainOf(m.Name)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := qemuPID(dom.name)
	if err != nil {
		t.Fatal(err)
	}
	console := libvirt.ConsoleLog(s.vm.consoleDir, dom.name)
	if n := bootsIn(t, console); n != 1 {
		t.Fatalf("the console shows %d boots before the update, want 1", n)
	}

	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q,%q:%q}}}`,
		v1alpha1.NodeUpdateLabel, v1alpha1.NodeUpdateReady, v1alpha1.NodeUpdateVersionLabel, newV))
	if err := k8s.Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
	labelled := time.Now()
	s.eventually(3*time.Minute, "Node "+name+" to run "+newV+", Ready, update=succeeded", func() (bool, error) {
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return false, err
		}
		got := n.Labels[v1alpha1.NodeUpdateLabel]
		if got == v1alpha1.NodeUpdateFailed {
			t.Fatalf("the update failed: %s", n.Annotations[v1alpha1.NodeUpdateMessageAnnotation])
		}
		if got == v1alpha1.NodeUpdateSucceeded && n.Status.NodeInfo.KubeletVersion == newV && nodeReady(n) {
			node = n
			return true, nil
		}
		return false, fmt.Errorf("update=%q, kubeletVersion %q, Ready %t", got, n.Status.NodeInfo.KubeletVersion, nodeReady(n))
	})
	t.Logf("update=ready to update=succeeded (reboot, rejoin, Ready with %s): %.1fs", newV, time.Since(labelled).Seconds())

	if node.Spec.ProviderID != m.Spec.ProviderID {
		t.Errorf("Node %s has providerID %q after the update, its Machine %q", name, node.Spec.ProviderID, m.Spec.ProviderID)
	}
	if node.Status.NodeInfo.BootID == bootID {
		t.Errorf("the boot ID %s did not change: the guest did not reboot", bootID)
	}
	logBoots(t, console)
	if n := bootsIn(t, console); n != 2 {
		t.Errorf("the console shows %d boots after the update, want 2:\n%s", n, s.vm.consoleTail(dom.name, 40))
	}
	if now, err := qemuPID(dom.name); err != nil || now != pid {
		t.Errorf("the domain's QEMU is pid %d (%v), was %d: the VM was restarted, not rebooted", now, err, pid)
	}

	s.scale(0)
	s.waitFleet(0, "small", 5*time.Minute)
	s.eventually(time.Minute, "no Node, volume or QEMU process of the scenario left", func() (bool, error) {
		nodes, err := s.scenarioNodes()
		if err != nil {
			return false, err
		}
		vols, err := s.vm.volumes()
		if err != nil {
			return false, err
		}
		qemus := s.vm.qemuProcesses()
		return len(nodes)+len(vols)+len(qemus) == 0, fmt.Errorf("Nodes %v, volumes %v, QEMU pids %v", nodes, vols, qemus)
	})
}

// bootsIn counts the boots a console log shows: the node agent's pid 1
// logs "pid 1 up" once per boot.
func bootsIn(t *testing.T, console string) int {
	t.Helper()
	data, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "millwright-node-agent: pid 1 up")
}

// logBoots logs the console's lines that tell the update: each boot, the
// state device, the reboot.
func logBoots(t *testing.T, console string) {
	data, _ := os.ReadFile(console)
	for line := range strings.Lines(string(data)) {
		for _, k := range []string{"pid 1 up", "state", "update", "Node ", "rebooting"} {
			if strings.Contains(line, k) {
				t.Log(strings.TrimRight(line, "\r\n"))
				break
			}
		}
	}
}
