//go:build cloudimage

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/provider/libvirt"
)

// cloudImageMemory is the cloud image's VMs' memory: Debian with systemd
// and cloud-init (Python) needs more than the node agent's initramfs.
const cloudImageMemory = "768Mi"

// TestVMCloudImage proves a real cloud image boots as a libvirt Machine
// from the driver's NoCloud seed and joins (issue #19): the Debian image
// hack/tools/cloudimage.sh builds (`make cloud-image`; systemd,
// cloud-init, Debian's cloud kernel, millwright-node-agent as a service
// in --cloud-init mode), its kernel and initrd booted directly with the
// image's overlay as root (kernel + image in the providerSpec).
//
//  1. One Machine of a MachineDeployment, with bootstrap data from a
//     TokenBootstrapConfigTemplate, reaches Running; its Node joined
//     through a CSR made with the Machine's bootstrap token and approved
//     by kube-controller-manager.
//  2. cloud-init ran from the seed: its final message on the serial
//     console names the NoCloud datasource on the seed disk (vdb).
//  3. The agent read the instance-id cloud-init took from the seed's
//     meta-data: the Machine's UID.
//
// Too slow and large for CI (debootstrap as root, a 440 MiB image, a
// minute to boot under TCG): it is
// built only with the cloudimage tag, by `make e2e-cloud-image`
// (docs/providers/libvirt.md, "Booting a cloud image").
func TestVMCloudImage(t *testing.T) {
	img := filepath.Join(binDir, "cloudimage")
	s := newVMScenario(t, "cloudimg")
	spec := s.vm.cloudImageSpec(t, img, cloudImageMemory)
	s.startManager("--token-bootstrap-api-server", vmAPIServer(t), "--machine-creation-timeout", "20m")
	s.createVMClassSpec("debian", spec)
	s.createTokenBootstrapTemplate("join")
	rec := s.record()
	s.createDeploymentOf(1, vmMachineSpec("debian", "join"), 1, 0)

	// 1. Boot and join.
	fleet := s.waitFleet(1, "debian", 20*time.Minute)
	s.logCreateToRunning(rec, fleet)
	s.checkJoinedThroughCSR(fleet)
	m := fleet[0]
	dom, err := s.vm.domainOf(m.Name)
	if err != nil {
		t.Fatal(err)
	}
	console := libvirt.ConsoleLog(s.vm.consoleDir, dom.name)

	// 2. cloud-init's final stage may end after the join: the agent
	// starts once cloud-init's network stage has written its files.
	finished := regexp.MustCompile(`Cloud-init v\. \S+ finished at .* Datasource DataSourceNoCloud \[seed=/dev/vdb\]`)
	s.eventually(10*time.Minute, "cloud-init's final message on the console of "+dom.name, func() (bool, error) {
		data, err := os.ReadFile(console)
		if err != nil {
			return false, err
		}
		if line := finished.Find(data); line != nil {
			t.Logf("console: %s", line)
			return true, nil
		}
		return false, fmt.Errorf("not yet; console tail:\n%s", s.vm.consoleTail(dom.name, 10))
	})

	// 3. The instance-id the agent was given by cloud-init.
	data, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}
	want := "instance-id " + string(m.UID)
	if !strings.Contains(string(data), want) {
		t.Errorf("the console of %s has no %q: the agent did not get the Machine's UID from cloud-init; tail:\n%s", dom.name, want, s.vm.consoleTail(dom.name, 40))
	}
	// For the record (docs/providers/libvirt.md): cloud-init's stages,
	// what it complained of, and the agent's join.
	for _, l := range strings.Split(string(data), "\n") {
		agent := strings.Contains(l, "millwright-node-agent:")
		cloudInit := strings.Contains(l, "Cloud-init v.") || strings.Contains(l, "WARNING") || strings.Contains(l, "Failed")
		if agent || cloudInit {
			t.Logf("console: %s", strings.TrimSpace(l))
		}
	}
	rec.verify()
}
