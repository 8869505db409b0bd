package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/libvirt"
)

// TestVMInPlaceVersionUpgrade proves an in-place Kubernetes version
// upgrade on real VMs, orchestrated end to end (docs/in-place-updates.md):
// 3 libvirt Machines booting the node agent, strategy InPlace with
// maxUnavailable 1, get a template with a newer spec.version. For each
// Machine the MachineDeployment controller starts the update, the machine
// controller cordons and drains the Node and hands the version to the
// node agent through the Node's labels, and the agent reboots the guest
// with reboot(2) and comes back with the new version. Then:
//
//   - at every observed state at most one Machine is cordoned, draining,
//     rebooting or not Ready, and never more than 3 exist;
//   - every Machine keeps its name, providerID and QEMU process (libvirt's
//     on_reboot restart resets the guest in place) and ends in the new
//     MachineSet at the new version, its Node uncordoned;
//   - each guest really rebooted: its Node's boot ID changed and its
//     console shows pid 1 starting twice;
//   - the Nodes report the new kubelet version: the agents rejoined with
//     the credentials kept on their state volumes (the bootstrap tokens
//     were deleted after the first join).
//
// It logs the seconds the whole update took (three reboots under TCG).
func TestVMInPlaceVersionUpgrade(t *testing.T) {
	const replicas = 3
	s := newVMScenario(t, "vminplace")
	s.startManager("--token-bootstrap-api-server", vmAPIServer(t))
	s.createVMClass("small", smallVM)
	s.createTokenBootstrapTemplate("join")
	sv, err := kubernetes.NewForConfigOrDie(cluster.RESTConfig()).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// The agent takes a version no newer (minor) than the API server's.
	server := version.MustParseGeneric(sv.GitVersion)
	oldV := fmt.Sprintf("v%d.%d.1", server.Major(), server.Minor()-1)
	newV := fmt.Sprintf("v%d.%d.0", server.Major(), server.Minor())
	spec := vmMachineSpec("small", "join")
	spec.Version = oldV
	s.createDeploymentOf(replicas, spec, 1, 0)
	s.createInPlaceStrategy(v1alpha1.InPlaceAuto, 0)

	fleet := s.waitFleet(replicas, "small", 10*time.Minute)
	s.checkJoinedThroughCSR(fleet) // and their tokens deleted
	s.checkNodeVersions(fleet, oldV)
	type vm struct {
		bootID, domain string
		pid            int
	}
	before := map[string]vm{}
	for _, m := range fleet {
		dom, err := s.vm.domainOf(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := qemuPID(dom.name)
		if err != nil {
			t.Fatal(err)
		}
		before[m.Name] = vm{bootID: s.nodeNamed(nodeOf(&m)).Status.NodeInfo.BootID, domain: dom.name, pid: pid}
		if n := bootsIn(t, libvirt.ConsoleLog(s.vm.consoleDir, dom.name)); n != 1 {
			t.Fatalf("the console of %s shows %d boots before the update, want 1", m.Name, n)
		}
	}
	ids := providerIDs(fleet)

	rec := s.record(withinInPlaceBounds(replicas, replicas, 1))
	started := time.Now()
	s.updateDeployment(func(md *v1alpha1.MachineDeployment) { md.Spec.Template.Spec.Version = newV })
	var after []v1alpha1.Machine
	s.eventually(15*time.Minute, "every Machine at "+newV, func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		if ok, err := s.fleetIs(ms, replicas, "small"); !ok {
			return false, err
		}
		for _, m := range ms {
			if m.Spec.Version != newV || m.Status.NodeVersion != newV {
				return false, fmt.Errorf("Machine %s: spec.version %q, its Node runs %q", m.Name, m.Spec.Version, m.Status.NodeVersion)
			}
		}
		after = ms
		return true, nil
	})
	t.Logf("in-place upgrade of %d VMs %s → %s: %.1fs", replicas, oldV, newV, time.Since(started).Seconds())
	rec.verify()
	if got := providerIDs(after); !maps.Equal(ids, got) {
		t.Errorf("the Machines' VMs changed: before %v, after %v", ids, got)
	}
	s.checkNodeVersions(after, newV)
	s.checkMovedInPlace(after)
	for _, m := range after {
		b := before[m.Name]
		if s.nodeNamed(nodeOf(&m)).Status.NodeInfo.BootID == b.bootID {
			t.Errorf("the boot ID of %s did not change: the guest did not reboot", m.Name)
		}
		console := libvirt.ConsoleLog(s.vm.consoleDir, b.domain)
		if n := bootsIn(t, console); n != 2 {
			logBoots(t, console)
			t.Errorf("the console of %s shows %d boots after the update, want 2", m.Name, n)
		}
		if now, err := qemuPID(b.domain); err != nil || now != b.pid {
			t.Errorf("the QEMU of %s is pid %d (%v), was %d: the VM was restarted, not rebooted", m.Name, now, err, b.pid)
		}
	}

	s.scale(0)
	s.waitFleet(0, "small", 5*time.Minute)
	s.waitNothingLeft()
}

// createInPlaceStrategy switches the scenario's deployment to strategy
// InPlace with the given orchestration (maxUnavailable 1).
func (s *scenario) createInPlaceStrategy(orchestration v1alpha1.InPlaceOrchestration, maxFailed int32) {
	s.t.Helper()
	s.updateDeployment(func(md *v1alpha1.MachineDeployment) { md.Spec.Strategy = inPlaceStrategy(orchestration, maxFailed) })
}

// inPlaceStrategy is strategy InPlace with maxUnavailable 1.
func inPlaceStrategy(orchestration v1alpha1.InPlaceOrchestration, maxFailed int32) v1alpha1.MachineDeploymentStrategy {
	one := intstr.FromInt(1)
	return v1alpha1.MachineDeploymentStrategy{
		Type: v1alpha1.InPlaceStrategy,
		InPlace: &v1alpha1.InPlaceMachineDeployment{
			Orchestration: orchestration, MaxUnavailable: &one, MaxFailed: &maxFailed,
		},
	}
}

// checkNodeVersions: each Machine's Node reports version as its kubelet's.
func (s *scenario) checkNodeVersions(ms []v1alpha1.Machine, version string) {
	s.t.Helper()
	for _, m := range ms {
		node := s.nodeNamed(nodeOf(&m))
		if got := node.Status.NodeInfo.KubeletVersion; got != version {
			s.t.Errorf("Node %s of %s reports kubelet %q, want %q", node.Name, m.Name, got, version)
		}
	}
}

func (s *scenario) nodeNamed(name string) *corev1.Node {
	s.t.Helper()
	node := &corev1.Node{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		s.t.Fatal(err)
	}
	return node
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
