// Package demo runs Millwright for real on one machine: a local cluster
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok),
// the simulated cloud and the manager as separate processes, and a sample
// MachineDeployment with a workload, shown live until it is all Running.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/localcluster"
)

const (
	namespace    = "default"
	workloadName = "hello"
	replicas     = 3
)

// Options configure Run.
type Options struct {
	// Root is the repository root (manifests under config/, binaries under bin/).
	Root string
	// Bin holds the programs the demo runs (the cluster's, the manager, the
	// driver, kubectl); empty means Root/bin. test/docs points it at the
	// programs it built from the tree under test.
	Bin string
	// Dir holds the cluster's files and logs; empty means a temporary directory.
	Dir string
	// Provider is the demo's driver: ProviderSim (the default) or
	// ProviderLibvirt (real VMs).
	Provider string
	// Exit makes Run return as soon as the sample is fully up, instead of
	// running until ctx ends.
	Exit bool
	// Timeout bounds the wait for the sample to come up.
	Timeout time.Duration
	// Out receives the live table and instructions.
	Out io.Writer
}

// Run runs the demo until ctx ends (or, with Exit, until the sample is up),
// then stops every process it started.
func Run(ctx context.Context, o Options) error {
	bin := o.bin()
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, format+"\n", args...) }
	p, err := newProvider(o)
	if err != nil {
		return err
	}
	say("Starting a local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)...")
	cluster, err := localcluster.Start(ctx, localcluster.Options{BinDir: bin, Dir: o.Dir, Logf: func(f string, a ...any) { say("  "+f, a...) },
		APIServerExtraIPs: p.apiServerExtraIPs()})
	if err != nil {
		return err
	}
	// stopDriver undoes what the provider's start did beside its process
	// (which stops with the cluster's): after the cluster is down.
	stopDriver := func() {}
	defer func() {
		say("Stopping the manager, the %s driver and the cluster...", p.name())
		if err := cluster.Stop(); err != nil {
			say("stopping: %v", err)
		}
		stopDriver()
	}()
	c, err := newClient(cluster)
	if err != nil {
		return err
	}
	say("Installing the CRDs...")
	if err := applyFiles(ctx, c, filepath.Join(o.Root, "config", "crd", "bases", "*.yaml"), nil); err != nil {
		return err
	}
	if err := waitEstablished(ctx, c); err != nil {
		return err
	}

	socket := "unix://" + filepath.Join(cluster.Dir(), p.name()+".sock")
	stop, err := p.start(ctx, cluster, socket, say)
	if err != nil {
		return err
	}
	stopDriver = stop
	healthAddr, err := freeAddr()
	if err != nil {
		return err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	say("Starting millwright-manager (metrics on http://%s/metrics)...", metricsAddr)
	args := append([]string{"--kubeconfig", cluster.Kubeconfig(), "--driver", p.name() + "=" + socket,
		"--health-probe-bind-address", healthAddr, "--metrics-bind-address", metricsAddr}, p.managerArgs(cluster)...)
	if err := cluster.StartProcess(ctx, "millwright-manager", filepath.Join(bin, "millwright-manager"), args...); err != nil {
		return err
	}
	if err := waitReady(ctx, "http://"+healthAddr+"/readyz"); err != nil {
		return fmt.Errorf("the manager did not become ready (log: %s): %w", cluster.LogPath("millwright-manager"), err)
	}
	say("Applying the sample: %s...", p.sample())
	if err := applyFiles(ctx, c, filepath.Join(p.manifests(), "*.yaml"), p.vars()); err != nil {
		return err
	}
	defer p.removeFleet(ctx, c, say)

	snap, err := watchUntilUp(ctx, c, o, p.hasWorkload())
	if err != nil {
		if snap != nil {
			say("\nThe sample did not come up. What is missing:")
			snap.diagnose(o.Out)
		}
		say("Component logs are in %s", filepath.Join(cluster.Dir(), "logs"))
		return err
	}
	say("\nEverything is Running.")
	p.printNextSteps(o.Out, cluster)
	if o.Exit {
		return nil
	}
	say("\nPress Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

func (o Options) bin() string {
	if o.Bin != "" {
		return o.Bin
	}
	return filepath.Join(o.Root, "bin")
}

// watchUntilUp prints the fleet whenever it changes, until it is fully up.
func watchUntilUp(ctx context.Context, c client.Client, o Options, workload bool) (*snapshot, error) {
	var last string
	var snap *snapshot
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
		s, err := observe(ctx, c, workload)
		if err != nil {
			return false, nil // the API server may be busy; try again
		}
		snap = s
		var buf strings.Builder
		s.print(&buf)
		if buf.String() != last {
			last = buf.String()
			fmt.Fprintf(o.Out, "\n[%s]\n%s", time.Now().Format("15:04:05"), last)
		}
		return s.done(replicas), nil
	})
	return snap, err
}

func printSimNextSteps(out io.Writer, root, bin string, cluster *localcluster.Cluster, adminAddr string) {
	kubectl := filepath.Join(bin, "kubectl")
	fmt.Fprintf(out, `
Try this, in another terminal:

  export KUBECONFIG=%[1]s
  alias kubectl=%[2]s

  kubectl get millwright                      # MachineDeployments, MachineSets, Machines, MachineClasses
  kubectl get nodes,pods -o wide

  # Scale the fleet:
  kubectl scale machinedeployment demo --replicas=5

  # Roll it to a bigger class (one extra Machine at a time, the workload's budget honoured):
  kubectl apply -f %[3]s
  kubectl patch machinedeployment demo --type merge -p '{"spec":{"template":{"spec":{"class":{"name":"demo-large"}}}}}'

  # Kill a VM behind Millwright's back; it goes Unknown, then Failed, then is replaced:
  curl -s http://%[4]s/vms | head
  curl -s -X POST http://%[4]s/vms/VM_ID/kill

  # Ask for a Machine to be replaced through its Node:
  kubectl annotate node NODE machine.millwright.dev/trigger-deletion=true

Logs of every process are in %[5]s.
`, cluster.Kubeconfig(), kubectl, filepath.Join(root, "config", "demo", "extras", "machineclass-large.yaml"), adminAddr,
		filepath.Join(cluster.Dir(), "logs"))
}

func newClient(cluster *localcluster.Cluster) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cluster.RESTConfig(), client.Options{Scheme: scheme})
}

func waitReady(ctx context.Context, url string) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", errors.New("no free loopback port: " + err.Error())
	}
	defer l.Close()
	return l.Addr().String(), nil
}
