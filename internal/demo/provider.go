package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/libvirtd"
	"github.com/millwright-dev/millwright/internal/localcluster"
)

// The demo's providers (Options.Provider).
const (
	ProviderSim     = "sim"
	ProviderLibvirt = "libvirt"
)

// provider is what differs between the demo on the simulated cloud and
// the demo on real VMs.
type provider interface {
	name() string
	// apiServerExtraIPs are the API server certificate's extra addresses.
	apiServerExtraIPs() []net.IP
	// start starts the driver serving at socket, a process of the cluster;
	// stop undoes the rest of what start did, once the cluster is down.
	start(ctx context.Context, cluster *localcluster.Cluster, socket string, say func(string, ...any)) (stop func(), err error)
	managerArgs(cluster *localcluster.Cluster) []string
	// manifests is the directory of the sample, sample describes it, vars
	// fill in its <<NAME>>s.
	manifests() string
	sample() string
	vars() map[string]string
	hasWorkload() bool
	// removeFleet deletes the sample's Machines before the manager stops,
	// where they outlive the demo otherwise.
	removeFleet(ctx context.Context, c client.Client, say func(string, ...any))
	printNextSteps(out io.Writer, cluster *localcluster.Cluster)
}

func newProvider(o Options) (provider, error) {
	switch o.Provider {
	case "", ProviderSim:
		return &simProvider{root: o.Root, bin: o.bin()}, nil
	case ProviderLibvirt:
		return &libvirtProvider{root: o.Root, bin: o.bin()}, nil
	case ProviderAWS:
		return &awsProvider{root: o.Root, bin: o.bin()}, nil
	}
	return nil, fmt.Errorf("unknown provider %q: %s, %s or %s", o.Provider, ProviderSim, ProviderLibvirt, ProviderAWS)
}

// simProvider: millwright-sim, kwok's Nodes and a workload.
type simProvider struct {
	root, bin, adminAddr string
}

func (p *simProvider) name() string                { return ProviderSim }
func (p *simProvider) apiServerExtraIPs() []net.IP { return nil }

func (p *simProvider) start(ctx context.Context, cluster *localcluster.Cluster, socket string, say func(string, ...any)) (func(), error) {
	var err error
	if p.adminAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	say("Starting millwright-sim (the simulated cloud; admin API on http://%s)...", p.adminAddr)
	err = cluster.StartProcess(ctx, "millwright-sim", filepath.Join(p.bin, "millwright-sim"),
		"--endpoint", socket, "--admin-address", p.adminAddr, "--kubeconfig", cluster.Kubeconfig(),
		"--node-mode", "kwok", "--snapshot", filepath.Join(cluster.Dir(), "sim.json"))
	return func() {}, err
}

func (p *simProvider) managerArgs(*localcluster.Cluster) []string { return nil }
func (p *simProvider) manifests() string                          { return filepath.Join(p.root, "config", "demo") }
func (p *simProvider) sample() string {
	return fmt.Sprintf("MachineClass demo-small, MachineDeployment demo (%d replicas), Deployment %s with a PodDisruptionBudget", replicas, workloadName)
}
func (p *simProvider) vars() map[string]string                                          { return nil }
func (p *simProvider) hasWorkload() bool                                                { return true }
func (p *simProvider) removeFleet(context.Context, client.Client, func(string, ...any)) {}
func (p *simProvider) printNextSteps(out io.Writer, cluster *localcluster.Cluster) {
	printSimNextSteps(out, p.root, p.bin, cluster, p.adminAddr)
}

// vmAPIServerIP is where the VMs reach the API server: their user-mode
// network is restricted to one guest forward, from this address at the
// API server's port to the API server on the host's loopback
// (config/demo/libvirt, docs/providers/libvirt.md "The network").
var vmAPIServerIP = net.IPv4(10, 0, 2, 100)

// libvirtProvider: millwright-libvirt and real VMs booting the node agent.
type libvirtProvider struct {
	root, bin string
	// apiPort is the API server's port, which the classes' guest forward
	// names (known once the cluster started).
	apiPort string
}

func (p *libvirtProvider) name() string                { return ProviderLibvirt }
func (p *libvirtProvider) apiServerExtraIPs() []net.IP { return []net.IP{vmAPIServerIP} }

func (p *libvirtProvider) start(ctx context.Context, cluster *localcluster.Cluster, socket string, say func(string, ...any)) (func(), error) {
	u, err := url.Parse(cluster.APIServerURL())
	if err != nil {
		return nil, err
	}
	p.apiPort = u.Port()
	say("Making sure libvirtd and virtlogd run...")
	daemons, err := libvirtd.Ensure(ctx, filepath.Join(cluster.Dir(), "logs"))
	if err != nil {
		return nil, err
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = daemons.Stop(ctx)
	}
	health, err := freeAddr()
	if err != nil {
		stop()
		return nil, err
	}
	say("Starting millwright-libvirt (the libvirt driver; qemu:///system)...")
	// The demo's classes boot the kernel and initramfs in bin/vm and reach
	// the API server through one guest forward: all the driver lets them.
	if err := cluster.StartProcess(ctx, "millwright-libvirt", filepath.Join(p.bin, "millwright-libvirt"),
		"--endpoint", socket, "--health-address", health,
		"--boot-file-dir", filepath.Join(p.bin, "vm"), "--allowed-forward", "127.0.0.1:"+p.apiPort); err != nil {
		stop()
		return nil, err
	}
	if err := waitReady(ctx, "http://"+health+"/readyz"); err != nil {
		stop()
		return nil, fmt.Errorf("millwright-libvirt did not become ready (log: %s): %w", cluster.LogPath("millwright-libvirt"), err)
	}
	return stop, nil
}

func (p *libvirtProvider) managerArgs(cluster *localcluster.Cluster) []string {
	u, _ := url.Parse(cluster.APIServerURL())
	return []string{"--token-bootstrap-api-server", "https://" + vmAPIServerIP.String() + ":" + u.Port()}
}

func (p *libvirtProvider) manifests() string {
	return filepath.Join(p.root, "config", "demo", "libvirt")
}

func (p *libvirtProvider) sample() string {
	return fmt.Sprintf("MachineClass demo-small (libvirt VMs), TokenBootstrapConfigTemplate demo, MachineDeployment demo (%d replicas)", replicas)
}

func (p *libvirtProvider) vars() map[string]string {
	return map[string]string{"BIN": p.bin, "API_PORT": p.apiPort}
}

func (p *libvirtProvider) hasWorkload() bool { return false }

// removeFleet deletes the MachineDeployment and waits (up to 3 minutes)
// for its Machines to be gone: their domains are persistent and would keep
// running after the demo.
func (p *libvirtProvider) removeFleet(ctx context.Context, c client.Client, say func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	say("Deleting the MachineDeployment demo and waiting for its VMs to be deleted...")
	md := &v1alpha1.MachineDeployment{}
	md.Namespace, md.Name = namespace, "demo"
	if err := client.IgnoreNotFound(c.Delete(ctx, md)); err != nil {
		say("deleting the MachineDeployment: %v", err)
		return
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		ms := &v1alpha1.MachineList{}
		if err := c.List(ctx, ms, client.InNamespace(namespace)); err != nil {
			return false, nil
		}
		return len(ms.Items) == 0, nil
	})
	if err != nil {
		say("Machines are left (virsh list --all shows their domains mw-*): %v", err)
	}
}

func (p *libvirtProvider) printNextSteps(out io.Writer, cluster *localcluster.Cluster) {
	kubectl := filepath.Join(p.bin, "kubectl")
	fmt.Fprintf(out, `
Each Machine is a QEMU VM (libvirt domain mw-<Machine UID>) booting the node
agent, which joined through a bootstrap token and a CSR that
kube-controller-manager approved. Try this, in another terminal:

  export KUBECONFIG=%[1]s
  alias kubectl=%[2]s

  kubectl get millwright                      # MachineDeployments, MachineSets, Machines, MachineClasses
  kubectl get nodes -o wide                   # the VMs' Nodes, their memory: kubectl describe node NODE
  kubectl get csr                             # approved by kube-controller-manager
  virsh list --all                            # the domains

  # A VM's serial console (the node agent logs there):
  tail /var/log/libvirt/qemu/mw-UID-console.log

  # Kill a VM behind Millwright's back; its Node goes NotReady, the Machine
  # Unknown, then Failed after its health timeout (1m), then it is replaced:
  virsh destroy mw-UID                        # or: kill -9 $(cat /run/libvirt/qemu/mw-UID.pid)

  # Scale the fleet, or roll it to a class with more memory (one extra VM
  # at a time; the class names this repository's bin/vm files):
  kubectl scale machinedeployment demo --replicas=4
  sed 's|<<BIN>>|%[4]s|g; s|<<API_PORT>>|%[6]s|g' %[3]s | kubectl apply -f -
  kubectl patch machinedeployment demo --type merge -p '{"spec":{"template":{"spec":{"class":{"name":"demo-large"}}}}}'

Logs of every process are in %[5]s. On exit the demo deletes its VMs.
`, cluster.Kubeconfig(), kubectl, filepath.Join(p.manifests(), "extras", "machineclass-large.yaml"), p.bin,
		filepath.Join(cluster.Dir(), "logs"), p.apiPort)
}
