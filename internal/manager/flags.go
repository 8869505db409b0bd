package manager

import (
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// AddFlags defines every flag on fs, bound to o; o's values are the defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cluster(s); empty: $KUBECONFIG, in-cluster, ~/.kube/config")
	fs.StringVar(&o.ControlKubeconfig, "control-kubeconfig", o.ControlKubeconfig, "kubeconfig of the control cluster, where Machines live (default --kubeconfig)")
	fs.StringVar(&o.TargetKubeconfig, "target-kubeconfig", o.TargetKubeconfig, "kubeconfig of the target cluster, where Nodes live (default: the control cluster)")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "watch only this namespace of the control cluster; empty: all namespaces")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "queries per second to each API server, for each kind of object (each kind has its own client and limit)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "burst of queries to each API server, for each kind of object")

	fs.IntVar(&o.Workers.Machine, "machine-workers", o.Workers.Machine, "concurrent reconciles of the machine controller")
	fs.IntVar(&o.Workers.MachineSet, "machineset-workers", o.Workers.MachineSet, "concurrent reconciles of the MachineSet controller")
	fs.IntVar(&o.Workers.MachineDeployment, "machinedeployment-workers", o.Workers.MachineDeployment, "concurrent reconciles of the MachineDeployment controller")

	m := &o.Machine
	fs.DurationVar(&m.CreationTimeout, "machine-creation-timeout", m.CreationTimeout, "a Machine not Running this long after creation is Failed (spec.lifecycle.creationTimeout overrides)")
	fs.DurationVar(&m.HealthTimeout, "machine-health-timeout", m.HealthTimeout, "a Machine unhealthy this long is Failed (spec.lifecycle.healthTimeout overrides)")
	fs.DurationVar(&m.DrainTimeout, "machine-drain-timeout", m.DrainTimeout, "a drain taking longer is forced (spec.lifecycle.drainTimeout overrides)")
	fs.DurationVar(&m.NodeDeletionTimeout, "node-deletion-timeout", m.NodeDeletionTimeout, "once its VM is gone, a Machine whose Node cannot be deleted (target cluster unreachable) finishes deleting after this, with a Warning Event; 0 retries forever (spec.lifecycle.nodeDeletionTimeout overrides)")
	fs.Int32Var(&m.MaxEvictRetries, "max-evict-retries", m.MaxEvictRetries, "eviction rounds a disruption budget may refuse before the pod is deleted (spec.lifecycle.maxEvictRetries overrides)")
	fs.StringSliceVar(&m.NodeConditions, "node-conditions", m.NodeConditions, "Node conditions that make a Machine unhealthy while True, comma-separated (spec.lifecycle.nodeConditions overrides)")
	fs.Int32Var(&m.MaxConcurrentReplacements, "max-concurrent-replacements", m.MaxConcurrentReplacements, "Failed Machines of one MachineSet or MachineDeployment replaced at once (its spec.maxConcurrentReplacements overrides)")
	fs.DurationVar(&m.BackoffBase, "backoff-base", m.BackoffBase, "first retry delay after a retryable driver error")
	fs.DurationVar(&m.BackoffCap, "backoff-cap", m.BackoffCap, "longest retry delay after retryable driver errors")
	fs.DurationVar(&m.LongBackoffBase, "long-backoff-base", m.LongBackoffBase, "first retry delay after exhausted quota or capacity")
	fs.DurationVar(&m.LongBackoffCap, "long-backoff-cap", m.LongBackoffCap, "longest retry delay after exhausted quota or capacity")
	fs.DurationVar(&m.DriverCallTimeout, "driver-call-timeout", m.DriverCallTimeout, "bound of one driver call")
	fs.IntVar(&m.MaxConcurrentCreates, "max-concurrent-creates", m.MaxConcurrentCreates, "CreateMachine calls in flight at once, over all drivers (they do not hold the machine workers)")
	fs.DurationVar(&m.VolumeDetachTimeout, "volume-detach-timeout", m.VolumeDetachTimeout, "wait for an evicted pod's volumes to detach at most this long")
	fs.DurationVar(&m.EvictionRetryInterval, "eviction-retry-interval", m.EvictionRetryInterval, "time between two eviction rounds a PodDisruptionBudget refused; pods still refused after --max-evict-retries rounds are deleted")
	fs.DurationVar(&m.UnreachableForceDrainAfter, "unreachable-force-drain-after", m.UnreachableForceDrainAfter, "force the drain of a Node not Ready this long")
	fs.DurationVar(&m.PreserveTimeout, "machine-preserve-timeout", m.PreserveTimeout, "a preserved Machine is kept this long, then released: drained and deleted if it failed (spec.lifecycle.preserveTimeout overrides; docs/preservation.md)")
	fs.DurationVar(&m.HealthResync, "machine-health-resync", m.HealthResync, "re-check Running Machines this often even without events")

	sf := &o.Safety
	fs.DurationVar(&sf.OrphanVMsPeriod, "machine-safety-orphan-vms-period", sf.OrphanVMsPeriod, "time between two passes deleting VMs no Machine manages (a VM is deleted when seen orphaned on two consecutive passes)")
	fs.DurationVar(&sf.APIServerCheckPeriod, "machine-safety-apiserver-statuscheck-period", sf.APIServerCheckPeriod, "how often the control and target API servers are probed; while one is unreachable no Machine changes phase")
	fs.DurationVar(&sf.APIServerCheckTimeout, "machine-safety-apiserver-statuscheck-timeout", sf.APIServerCheckTimeout, "an API server not answering a probe within this is unreachable")
	fs.Int32Var(&sf.SafetyUp, "safety-up", sf.SafetyUp, "a MachineSet or MachineDeployment whose Machines reach replicas + maxSurge + this is frozen: no scale-up")
	fs.Int32Var(&sf.SafetyDown, "safety-down", sf.SafetyDown, "a frozen MachineSet or MachineDeployment unfreezes when its Machines fall to replicas + maxSurge + --safety-up − this")
	fs.DurationVar(&sf.OvershootingPeriod, "machine-safety-overshooting-period", sf.OvershootingPeriod, "how often each MachineSet and MachineDeployment is checked for too many Machines (each Machine creation checks too)")

	fs.BoolVar(&o.TokenBootstrap.Enabled, "token-bootstrap-provider", o.TokenBootstrap.Enabled, "run the token bootstrap provider: TokenBootstrapConfigs become per-Machine bootstrap tokens in the target cluster and cloud-init user data (needs its CRDs installed)")
	fs.StringVar(&o.TokenBootstrap.APIServer, "token-bootstrap-api-server", o.TokenBootstrap.APIServer, "https URL at which booting VMs reach the target cluster's API server, for TokenBootstrapConfigs without spec.apiServer (default: the target cluster's URL from the kubeconfig)")

	fs.Var(&driverFlag{specs: &o.Drivers}, "driver", "a driver as NAME=ENDPOINT: NAME is the MachineClass spec.provider, ENDPOINT unix:///path.sock, tcp://host:port or "+InProcessSim+" (the simulated cloud in this process, builtin Nodes); repeatable")
	fs.DurationVar(&o.DriverStartupTimeout, "driver-startup-timeout", o.DriverStartupTimeout, "at start-up, wait this long for every driver to answer GetPluginInfo")
	fs.DurationVar(&o.DriverProbeTimeout, "driver-probe-timeout", o.DriverProbeTimeout, "bound of the GetPluginInfo call of each /readyz check")
	fs.StringVar(&o.DriverTLS.CA, "driver-tls-ca", o.DriverTLS.CA, "mutual TLS with every driver reached over tcp://: accept only a driver whose certificate chains to this PEM CA bundle and names the endpoint's host (with --driver-tls-cert and --driver-tls-key; unix sockets stay plaintext)")
	fs.StringVar(&o.DriverTLS.Cert, "driver-tls-cert", o.DriverTLS.Cert, "mutual TLS: the PEM client certificate the manager presents to drivers over tcp://")
	fs.StringVar(&o.DriverTLS.Key, "driver-tls-key", o.DriverTLS.Key, "mutual TLS: the private key of --driver-tls-cert")

	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, `address of /metrics; "0" turns it off`)
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, `address of /healthz and /readyz; "0" turns them off`)
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "address of /debug/pprof; empty: off")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit, "soft limit of the Go runtime's memory, at which the garbage collector runs more often instead of letting the heap grow: a quantity such as 100Mi, "+MemoryLimitNone+", or "+MemoryLimitAuto+" (GOMEMLIMIT when set, else 90% of the container's memory limit, else none)")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "after SIGTERM, let reconciles in flight finish for at most this long")

	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "elect one active replica through a Lease")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "how long the Lease holds without renewal")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "how long the leader tries to renew before it stops leading")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "time between attempts to acquire or renew the Lease")
	fs.StringVar(&le.Namespace, "leader-elect-namespace", le.Namespace, "namespace of the Lease (default --namespace, else the pod's namespace)")
	fs.StringVar(&le.ID, "leader-elect-id", le.ID, "name of the Lease")

	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.Zap.BindFlags(zapFlags)
	fs.AddGoFlagSet(zapFlags)
}

// driverFlag is the repeatable --driver NAME=ENDPOINT. It only splits the
// value; Validate checks the name and the endpoint, with every other flag.
type driverFlag struct{ specs *[]DriverSpec }

func (f *driverFlag) Set(v string) error {
	name, endpoint, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want NAME=ENDPOINT, e.g. sim=unix:///run/millwright/sim.sock")
	}
	*f.specs = append(*f.specs, DriverSpec{Name: name, Endpoint: endpoint})
	return nil
}

func (f *driverFlag) String() string {
	if f.specs == nil {
		return ""
	}
	s := make([]string, len(*f.specs))
	for i, d := range *f.specs {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}

func (f *driverFlag) Type() string { return "NAME=ENDPOINT" }
