package manager

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/millwright-dev/millwright/internal/cli"
)

// nodeConditionPattern is the CRD's rule for spec.lifecycle.nodeConditions,
// so a flag and a Machine accept the same names.
var nodeConditionPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`)

// leaderElectionJitter is client-go's leaderelection.JitterFactor: it
// refuses a renew deadline not above retry period × 1.2.
const leaderElectionJitter = 1.2

// Validate checks every flag at once and returns one line per problem,
// each naming its flag, as a cli.UsageError; nil when all is well.
func (o *Options) Validate() error {
	v := &validator{}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"machine-creation-timeout", o.Machine.CreationTimeout},
		{"machine-health-timeout", o.Machine.HealthTimeout},
		{"machine-drain-timeout", o.Machine.DrainTimeout},
		{"backoff-base", o.Machine.BackoffBase},
		{"backoff-cap", o.Machine.BackoffCap},
		{"long-backoff-base", o.Machine.LongBackoffBase},
		{"long-backoff-cap", o.Machine.LongBackoffCap},
		{"driver-call-timeout", o.Machine.DriverCallTimeout},
		{"volume-detach-timeout", o.Machine.VolumeDetachTimeout},
		{"eviction-retry-interval", o.Machine.EvictionRetryInterval},
		{"unreachable-force-drain-after", o.Machine.UnreachableForceDrainAfter},
		{"machine-health-resync", o.Machine.HealthResync},
		{"machine-preserve-timeout", o.Machine.PreserveTimeout},
		{"driver-startup-timeout", o.DriverStartupTimeout},
		{"driver-probe-timeout", o.DriverProbeTimeout},
		{"machine-safety-orphan-vms-period", o.Safety.OrphanVMsPeriod},
		{"machine-safety-apiserver-statuscheck-period", o.Safety.APIServerCheckPeriod},
		{"machine-safety-apiserver-statuscheck-timeout", o.Safety.APIServerCheckTimeout},
		{"machine-safety-overshooting-period", o.Safety.OvershootingPeriod},
		{"leader-elect-lease-duration", o.LeaderElection.LeaseDuration},
		{"leader-elect-renew-deadline", o.LeaderElection.RenewDeadline},
		{"leader-elect-retry-period", o.LeaderElection.RetryPeriod},
	} {
		v.check(d.value > 0, d.flag, "must be a positive duration, got %s", d.value)
	}
	v.check(o.GracefulShutdownTimeout >= 0, "graceful-shutdown-timeout", "must not be negative, got %s", o.GracefulShutdownTimeout)
	v.check(o.Machine.BackoffBase <= o.Machine.BackoffCap, "backoff-base",
		"%s is longer than --backoff-cap %s", o.Machine.BackoffBase, o.Machine.BackoffCap)
	v.check(o.Machine.LongBackoffBase <= o.Machine.LongBackoffCap, "long-backoff-base",
		"%s is longer than --long-backoff-cap %s", o.Machine.LongBackoffBase, o.Machine.LongBackoffCap)

	v.check(o.Machine.NodeDeletionTimeout >= 0, "node-deletion-timeout", "must not be negative, got %s", o.Machine.NodeDeletionTimeout)
	v.check(o.Machine.MaxEvictRetries >= 0, "max-evict-retries", "must not be negative, got %d", o.Machine.MaxEvictRetries)
	v.check(o.Machine.MaxConcurrentReplacements >= 0, "max-concurrent-replacements", "must not be negative, got %d", o.Machine.MaxConcurrentReplacements)
	// Up 0 would freeze every rollout at its full surge; down 0 would
	// freeze and unfreeze at the same count; down above up would keep a
	// MachineSet back at its replicas frozen for ever.
	v.check(o.Safety.SafetyUp >= 1, "safety-up", "must be at least 1, got %d", o.Safety.SafetyUp)
	v.check(o.Safety.SafetyDown >= 1 && o.Safety.SafetyDown <= o.Safety.SafetyUp, "safety-down",
		"must be between 1 and --safety-up (%d), got %d", o.Safety.SafetyUp, o.Safety.SafetyDown)
	for _, c := range o.Machine.NodeConditions {
		v.check(nodeConditionPattern.MatchString(c) && len(c) <= 316, "node-conditions",
			"%q is not a Node condition type such as KernelDeadlock: letters, digits, '-', '_' and '.', optionally prefixed by a DNS name and '/'", c)
	}
	for _, w := range []struct {
		flag  string
		value int
	}{
		{"machine-workers", o.Workers.Machine},
		{"machineset-workers", o.Workers.MachineSet},
		{"machinedeployment-workers", o.Workers.MachineDeployment},
		{"max-concurrent-creates", o.Machine.MaxConcurrentCreates},
	} {
		v.check(w.value >= 1, w.flag, "must be at least 1, got %d", w.value)
	}
	v.check(o.KubeAPIQPS > 0, "kube-api-qps", "must be positive, got %g", o.KubeAPIQPS)
	v.check(o.KubeAPIBurst >= 1, "kube-api-burst", "must be at least 1, got %d", o.KubeAPIBurst)
	if o.Namespace != "" {
		v.dnsLabel("namespace", o.Namespace)
	}
	o.validateDrivers(v)
	if a := o.TokenBootstrap.APIServer; a != "" {
		u, err := url.Parse(a)
		v.check(err == nil && u.Scheme == "https" && u.Host != "", "token-bootstrap-api-server", "%q is not an https URL with a host", a)
	}
	o.validateLeaderElection(v)
	v.address("metrics-bind-address", o.MetricsBindAddress, true)
	v.address("health-probe-bind-address", o.HealthProbeBindAddress, true)
	v.address("pprof-bind-address", o.PprofBindAddress, false)
	if _, err := parseMemoryLimit(o.MemoryLimit); err != nil {
		v.check(false, "memory-limit", "%s", err)
	}

	if len(v.errs) == 0 {
		return nil
	}
	return &cli.UsageError{Err: errors.Join(v.errs...)}
}

func (o *Options) validateDrivers(v *validator) {
	seen := map[string]bool{}
	for _, d := range o.Drivers {
		if !v.dnsLabel("driver", d.Name) {
			continue
		}
		v.check(!seen[d.Name], "driver", "%q is given twice: one driver per name", d.Name)
		seen[d.Name] = true
		if d.Endpoint != InProcessSim {
			if err := cli.CheckEndpoint(d.Endpoint, false); err != nil {
				v.check(false, "driver", "%s: %v (or %s)", d.Name, err, InProcessSim)
			}
		}
	}
	// Half a TLS setting is refused rather than dialling plaintext.
	t := o.DriverTLS
	if !t.IsZero() {
		v.check(t.CA != "", "driver-tls-ca", "required with --driver-tls-cert and --driver-tls-key: the manager must check who the driver is")
		v.check(t.Cert != "", "driver-tls-cert", "required with --driver-tls-ca: the driver refuses a manager without a certificate")
		v.check(t.Key != "", "driver-tls-key", "required with --driver-tls-cert")
	}
}

func (o *Options) validateLeaderElection(v *validator) {
	le := o.LeaderElection
	v.check(le.RenewDeadline < le.LeaseDuration, "leader-elect-renew-deadline",
		"%s must be shorter than --leader-elect-lease-duration %s", le.RenewDeadline, le.LeaseDuration)
	v.check(float64(le.RenewDeadline) > leaderElectionJitter*float64(le.RetryPeriod), "leader-elect-retry-period",
		"%s is too long: --leader-elect-renew-deadline %s must be more than %g times it", le.RetryPeriod, le.RenewDeadline, leaderElectionJitter)
	if le.Namespace != "" {
		v.dnsLabel("leader-elect-namespace", le.Namespace)
	}
	for _, msg := range validation.IsDNS1123Subdomain(le.ID) {
		v.check(false, "leader-elect-id", "%q is not a valid Lease name: %s", le.ID, msg)
	}
}

// validator collects problems, one error per problem.
type validator struct{ errs []error }

func (v *validator) check(ok bool, flag, format string, args ...any) {
	if !ok {
		v.errs = append(v.errs, fmt.Errorf("--%s: "+format, append([]any{flag}, args...)...))
	}
}

func (v *validator) dnsLabel(flag, value string) bool {
	msgs := validation.IsDNS1123Label(value)
	for _, msg := range msgs {
		v.check(false, flag, "%q is not a valid name: %s", value, msg)
	}
	return len(msgs) == 0
}

func (v *validator) address(flag, addr string, zeroDisables bool) {
	if err := cli.CheckListenAddress(addr, zeroDisables); err != nil {
		v.check(false, flag, "%v", err)
	}
}
