package localcluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/millwright-dev/millwright/internal/repo"
)

// The components, by the names StopComponent, StartComponent, PIDs and the
// log files use.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
)

// Components lists the components in the order Start starts them; Stop
// stops them in reverse.
func Components() []string {
	return []string{Etcd, APIServer, ControllerManager, Scheduler, Kwok}
}

// Options configures Start. The zero value is usable from inside the
// repository.
type Options struct {
	// BinDir holds the binaries. Default: <repository root>/bin, the root
	// being found upwards from the working directory, then from the
	// running executable.
	BinDir string
	// Binaries overrides the binary of individual components, by component
	// name (e.g. {Scheduler: "/path/to/kube-scheduler"}).
	Binaries map[string]string
	// Dir is the working directory (certificates, data, kubeconfigs,
	// logs). It is created if missing, and must not hold a previous
	// cluster's etcd data. Default: a new temporary directory, which Stop
	// removes.
	Dir string
	// KubeconfigPath is where the administrator's kubeconfig is written.
	// Default: <Dir>/kubeconfig.
	KubeconfigPath string
	// StartTimeout bounds how long each component may take to become
	// healthy. Default: 90s (a cold kube-apiserver on two busy cores takes
	// tens of seconds).
	StartTimeout time.Duration
	// StopGracePeriod is how long a component may take to exit after
	// SIGTERM before it gets SIGKILL. Default: 10s.
	StopGracePeriod time.Duration
	// APIServerExtraIPs are added to the IP SANs of the API server's
	// serving certificate, beside 127.0.0.1: the addresses a VM reaches
	// the API server at through a forwarded port (QEMU user networking's
	// guestfwd, e.g. 10.0.2.100), so its TLS check passes.
	APIServerExtraIPs []net.IP
	// APIServerBindAddress is where the API server listens: 127.0.0.1
	// (the default), or 0.0.0.0 so that VMs on a libvirt network reach it
	// at the host's address on that network (add that address to
	// APIServerExtraIPs). Clients and probes still use 127.0.0.1, so no
	// other address is accepted. Every request still needs a client
	// certificate or token; anonymous requests get what the default RBAC
	// policy gives system:unauthenticated (health and version).
	APIServerBindAddress string
	// NodeHeartbeats sets kwok's Node Leases and kube-controller-manager's
	// grace period; the zero value is the defaults. HeartbeatsFor(n) gives
	// settings under which kwok keeps n Nodes Ready on a small machine.
	NodeHeartbeats NodeHeartbeats
	// AuditReads makes kube-apiserver log every read request (get, list,
	// and each watch's start) with its user and user agent, to
	// AuditLogPath: who reads what. Each request then waits for its line
	// to be written, which costs the API server CPU and its clients time.
	AuditReads bool
	// Logf, when set, receives progress messages ("etcd healthy after
	// 1.2s").
	Logf func(format string, args ...any)
}

func (o *Options) setDefaults() error {
	if o.BinDir == "" {
		root, err := repo.Root()
		if err != nil {
			return fmt.Errorf("localcluster: %w: set Options.BinDir (--bin-dir)", err)
		}
		o.BinDir = filepath.Join(root, "bin")
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 90 * time.Second
	}
	if o.StopGracePeriod <= 0 {
		o.StopGracePeriod = 10 * time.Second
	}
	switch o.APIServerBindAddress {
	case "":
		o.APIServerBindAddress = "127.0.0.1"
	case "127.0.0.1", "0.0.0.0":
	default:
		return fmt.Errorf("localcluster: APIServerBindAddress %q: only 127.0.0.1 and 0.0.0.0 include the loopback address the components use", o.APIServerBindAddress)
	}
	if err := o.NodeHeartbeats.check(); err != nil {
		return err
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return nil
}

// binary returns the path of a component's binary.
func (o *Options) binary(component string) string {
	if p := o.Binaries[component]; p != "" {
		return p
	}
	return filepath.Join(o.BinDir, component)
}

// checkBinaries fails, before anything is started, when a binary is
// missing, naming all the missing ones.
func (o *Options) checkBinaries() error {
	var missing []string
	for _, c := range Components() {
		p := o.binary(c)
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("localcluster: missing or not executable: %s: run `make tools` to build them", strings.Join(missing, ", "))
	}
	return nil
}

// repoRoot finds the repository root: the nearest directory holding
// Millwright's go.mod, upwards from the working directory (tests, `make
// demo`) or else from the executable (a binary built into the repository).
