// Package e2e runs issue #9's end-to-end scenarios. One local cluster
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok,
// each its own process) is shared by every scenario of the test binary;
// each scenario runs in a namespace of its own, with its own millwright-sim
// and millwright-manager processes (the manager restricted to that
// namespace with --namespace). Scenarios run one after the other: they
// share two cores with the control plane.
//
// The binaries under test are bin/millwright-manager, bin/millwright-sim
// and bin/millwright-libvirt (`make build`); the control plane's binaries,
// the VMs' kernel and initramfs (bin/vm) and libvirt come from `make tools`.
//
// The VM scenarios (vm_test.go) run real QEMU VMs through libvirt, so the
// suite needs root and starts libvirtd and virtlogd when they are not
// running (internal/libvirtd). The VMs use QEMU's user-mode network
// restricted to one guest forward, 10.0.2.100 at the API server's port to
// the API server on the host's loopback (each connection through a relay
// QEMU runs, docs/providers/libvirt.md), so the shared cluster's serving
// certificate carries that address; and 10.0.2.2, the host's loopback on
// an unrestricted network, which TestVMNeverJoins's VMs must not reach.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/libvirtd"
	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/testenv"
)

var (
	// cluster is the local cluster every scenario runs on.
	cluster *localcluster.Cluster
	// k8s is an administrator client of it (core kinds and Millwright's),
	// able to watch.
	k8s client.WithWatch
	// binDir holds the binaries under test.
	binDir string
	// daemons are the libvirt daemons TestMain made sure run.
	daemons *libvirtd.Daemons
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = filepath.Join(root, "bin")
	for _, b := range []string{"millwright-manager", "millwright-sim", "millwright-libvirt"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: run `make build` first\n", filepath.Join(binDir, b))
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	// E2E_DIR keeps the cluster's files and every process's log there,
	// instead of in a temporary directory removed at the end.
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, Dir: os.Getenv("E2E_DIR"), Logf: logf,
		APIServerExtraIPs: []net.IP{vmAPIServerIP, vmHostIP},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the cluster:", err)
		}
	}()
	cfg := cluster.RESTConfig()
	cfg.QPS, cfg.Burst = 100, 200
	scheme := testenv.Scheme()
	// The reference contract providers' kinds: the sim's and the manager's.
	for _, add := range []func(*runtime.Scheme) error{infrav1.AddToScheme, bootstrapv1.AddToScheme} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if k8s, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := installCRDs(ctx, filepath.Join(root, "config", "crd", "bases")); err != nil {
		fmt.Fprintln(os.Stderr, "installing the CRDs:", err)
		return 1
	}
	daemons, err = libvirtd.Ensure(ctx, cluster.Dir())
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the VM scenarios need libvirtd and virtlogd (qemu:///system, as root): %v\n", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		if err := daemons.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the libvirt daemons:", err)
		}
	}()
	return m.Run()
}

// installCRDs creates the CRDs in dir and waits until Millwright's kinds
// are served.
func installCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s (%v)", dir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := k8s.Create(ctx, u); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, l := range []client.ObjectList{&v1alpha1.MachineClassList{}, &v1alpha1.MachineList{}, &v1alpha1.MachineSetList{}, &v1alpha1.MachineDeploymentList{}} {
			if k8s.List(ctx, l) != nil {
				return false, nil
			}
		}
		return true, nil
	})
}
