// Package manager is the millwright-manager program: its flags, their
// validation, and Run, which connects the drivers and runs the core
// controllers over controller-runtime with leader election, metrics and
// health probes. cmd/millwright-manager only calls NewCommand, so
// everything here can be tested without building the binary.
package manager

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// InProcessSim is the --driver endpoint that runs the simulated cloud inside
// the manager, registering self-Ready (builtin) Nodes in the target cluster:
// one process is enough to try Millwright out.
const InProcessSim = "in-process:sim"

// Options are the manager's settings, one field per flag.
type Options struct {
	// Kubeconfig reaches the control cluster, and the target cluster unless
	// TargetKubeconfig is set. Empty: KUBECONFIG, in-cluster, ~/.kube/config.
	Kubeconfig string
	// ControlKubeconfig overrides Kubeconfig for the control cluster.
	ControlKubeconfig string
	// TargetKubeconfig reaches the cluster the Nodes live in. Empty: the
	// control cluster itself.
	TargetKubeconfig string
	// Namespace restricts the controllers to one namespace; empty: all.
	Namespace string
	// KubeAPIQPS and KubeAPIBurst bound the requests to each API server,
	// per kind of object: controller-runtime gives each kind its own REST
	// client and token bucket, so Machine writes do not wait behind Node
	// writes, and the manager's total is a multiple of these.
	KubeAPIQPS   float32
	KubeAPIBurst int

	// Workers are the concurrent reconciles of each controller.
	Workers Workers
	// Machine holds the lifecycle defaults a Machine's spec.lifecycle overrides.
	Machine machine.Config
	// Safety holds the safety controller's periods and thresholds (the
	// --machine-safety-* and --safety-* flags).
	Safety Safety

	// TokenBootstrap configures the token bootstrap provider's controller
	// (TokenBootstrapConfigs, internal/provider/tokenbootstrap).
	TokenBootstrap TokenBootstrap

	// Drivers are the --driver flags, in order.
	Drivers []DriverSpec
	// DriverStartupTimeout bounds the wait at start-up for every driver to
	// answer GetPluginInfo: a sidecar driver may start a little after the manager.
	DriverStartupTimeout time.Duration
	// DriverProbeTimeout bounds the GetPluginInfo of a readiness probe.
	DriverProbeTimeout time.Duration
	// DriverTLS, when set, is the manager's side of mutual TLS with every
	// driver reached over TCP (--driver-tls-ca, --driver-tls-cert,
	// --driver-tls-key); drivers on unix sockets stay plaintext.
	DriverTLS driver.TLSFiles

	// MetricsBindAddress serves /metrics ("0": off).
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz ("0": off).
	HealthProbeBindAddress string
	// PprofBindAddress serves /debug/pprof (empty: off).
	PprofBindAddress string
	// GracefulShutdownTimeout bounds how long reconciles in flight may take
	// to finish after SIGTERM.
	GracefulShutdownTimeout time.Duration
	// MemoryLimit is the Go runtime's soft memory limit: MemoryLimitAuto,
	// MemoryLimitNone or a quantity (memlimit.go).
	MemoryLimit string

	// LeaderElection makes one of several replicas the active one.
	LeaderElection LeaderElection

	// Zap configures the structured logs (the --zap-* flags).
	Zap zap.Options
}

// Workers are the concurrent reconciles of each controller.
type Workers struct {
	// Machine is the machine controller's.
	Machine int
	// MachineSet is reserved for the MachineSet controller.
	MachineSet int
	// MachineDeployment is reserved for the MachineDeployment controller.
	MachineDeployment int
}

// Safety are the safety controller's flags.
type Safety struct {
	// OrphanVMsPeriod is the time between two orphan VM collection passes.
	OrphanVMsPeriod time.Duration
	// APIServerCheckPeriod is the time between two probes of the API servers.
	APIServerCheckPeriod time.Duration
	// APIServerCheckTimeout bounds one probe.
	APIServerCheckTimeout time.Duration
	// SafetyUp is how many Machines above replicas + maxSurge freeze a set.
	SafetyUp int32
	// SafetyDown is how far below the freezing count a freeze lifts.
	SafetyDown int32
	// OvershootingPeriod is the time between two overshoot checks.
	OvershootingPeriod time.Duration
}

// TokenBootstrap are the --token-bootstrap-* flags.
type TokenBootstrap struct {
	// Enabled runs the TokenBootstrapConfig controller in the manager.
	Enabled bool
	// APIServer is the https URL booting VMs reach the target cluster's
	// API server at, for configs without spec.apiServer. Empty: the target
	// cluster's URL from the manager's kubeconfig (not reachable from
	// outside when the manager runs in a pod: set it there).
	APIServer string
}

// LeaderElection configures the Lease that elects the active replica.
type LeaderElection struct {
	// Enabled turns leader election on.
	Enabled bool
	// LeaseDuration is how long a lease holds without renewal: the longest
	// time no replica is active after the leader dies.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leading (and exits).
	RenewDeadline time.Duration
	// RetryPeriod is the time between two attempts to acquire or renew.
	RetryPeriod time.Duration
	// Namespace holds the Lease; empty: --namespace, else the pod's namespace.
	Namespace string
	// ID is the Lease's name.
	ID string
}

// DriverSpec is one --driver NAME=ENDPOINT flag.
type DriverSpec struct {
	// Name is the MachineClass spec.provider that selects the driver.
	Name string
	// Endpoint is unix:///path.sock, tcp://host:port or InProcessSim.
	Endpoint string
}

// String returns the flag's form, NAME=ENDPOINT.
func (d DriverSpec) String() string { return d.Name + "=" + d.Endpoint }

// NewOptions returns the defaults of every flag.
func NewOptions() *Options {
	return &Options{
		KubeAPIQPS:   50,
		KubeAPIBurst: 100,
		Workers:      Workers{Machine: 10, MachineSet: 5, MachineDeployment: 5},
		Machine:      machine.DefaultConfig(),
		Safety: Safety{
			OrphanVMsPeriod:       15 * time.Minute,
			APIServerCheckPeriod:  time.Minute,
			APIServerCheckTimeout: 30 * time.Second,
			SafetyUp:              2,
			SafetyDown:            1,
			OvershootingPeriod:    time.Minute,
		},

		TokenBootstrap: TokenBootstrap{Enabled: true},

		DriverStartupTimeout: 30 * time.Second,
		DriverProbeTimeout:   2 * time.Second,

		MetricsBindAddress:      ":8080",
		HealthProbeBindAddress:  ":8081",
		GracefulShutdownTimeout: 30 * time.Second,
		MemoryLimit:             MemoryLimitAuto,

		LeaderElection: LeaderElection{
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   2 * time.Second,
			ID:            "millwright-manager.machine.millwright.dev",
		},
	}
}
