package manager

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// parse parses args onto fresh defaults, as the command does.
func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("millwright-manager", pflag.ContinueOnError)
	fs.SetOutput(&strings.Builder{})
	o.AddFlags(fs)
	return o, fs.Parse(args)
}

func TestFlagsMapOntoOptions(t *testing.T) {
	o, err := parse(t,
		"--kubeconfig=/k", "--target-kubeconfig=/t", "--namespace=team-a",
		"--machine-workers=3", "--machineset-workers=4", "--machinedeployment-workers=6",
		"--machine-creation-timeout=7m", "--machine-health-timeout=3m", "--machine-drain-timeout=1h",
		"--max-evict-retries=2", "--node-conditions=A,example.com/B", "--max-concurrent-replacements=5",
		"--backoff-base=1s", "--backoff-cap=9s", "--long-backoff-base=10s", "--long-backoff-cap=1m",
		"--driver-call-timeout=30s", "--volume-detach-timeout=45s", "--eviction-retry-interval=7s",
		"--kube-api-qps=7", "--kube-api-burst=8",
		"--driver", "sim=unix:///run/sim.sock", "--driver=aws=tcp://127.0.0.1:9000", "--driver=try=in-process:sim",
		"--leader-elect", "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s",
		"--leader-elect-id=mw", "--pprof-bind-address=127.0.0.1:6060", "--memory-limit=100Mi",
		"--token-bootstrap-provider=false", "--token-bootstrap-api-server=https://api.example:6443",
		"--driver-tls-ca=/tls/ca.crt", "--driver-tls-cert=/tls/tls.crt", "--driver-tls-key=/tls/tls.key",
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("valid flags refused: %v", err)
	}
	m := o.Machine
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"kubeconfig", o.Kubeconfig, "/k"},
		{"target", o.TargetKubeconfig, "/t"},
		{"namespace", o.Namespace, "team-a"},
		{"driver TLS", o.DriverTLS, driver.TLSFiles{CA: "/tls/ca.crt", Cert: "/tls/tls.crt", Key: "/tls/tls.key"}},
		{"workers", o.Workers, Workers{Machine: 3, MachineSet: 4, MachineDeployment: 6}},
		{"creation", m.CreationTimeout, 7 * time.Minute},
		{"health", m.HealthTimeout, 3 * time.Minute},
		{"drain", m.DrainTimeout, time.Hour},
		{"evict", m.MaxEvictRetries, int32(2)},
		{"replacements", m.MaxConcurrentReplacements, int32(5)},
		{"backoff", [2]time.Duration{m.BackoffBase, m.BackoffCap}, [2]time.Duration{time.Second, 9 * time.Second}},
		{"long backoff", [2]time.Duration{m.LongBackoffBase, m.LongBackoffCap}, [2]time.Duration{10 * time.Second, time.Minute}},
		{"call timeout", m.DriverCallTimeout, 30 * time.Second},
		{"detach", m.VolumeDetachTimeout, 45 * time.Second},
		{"eviction retry", m.EvictionRetryInterval, 7 * time.Second},
		{"qps", o.KubeAPIQPS, float32(7)},
		{"burst", o.KubeAPIBurst, 8},
		{"leader", o.LeaderElection, LeaderElection{Enabled: true, LeaseDuration: 4 * time.Second,
			RenewDeadline: 3 * time.Second, RetryPeriod: time.Second, ID: "mw"}},
		{"pprof", o.PprofBindAddress, "127.0.0.1:6060"},
		{"memory limit", o.MemoryLimit, "100Mi"},
		{"token bootstrap", o.TokenBootstrap, TokenBootstrap{APIServer: "https://api.example:6443"}},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if !slices.Equal(m.NodeConditions, []string{"A", "example.com/B"}) {
		t.Errorf("node conditions %q", m.NodeConditions)
	}
	want := []DriverSpec{{"sim", "unix:///run/sim.sock"}, {"aws", "tcp://127.0.0.1:9000"}, {"try", InProcessSim}}
	if !slices.Equal(o.Drivers, want) {
		t.Errorf("drivers %v, want %v", o.Drivers, want)
	}
}

func TestDefaultsAreValid(t *testing.T) {
	o, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	if o.MetricsBindAddress != ":8080" || o.HealthProbeBindAddress != ":8081" || o.PprofBindAddress != "" {
		t.Errorf("addresses %q %q %q", o.MetricsBindAddress, o.HealthProbeBindAddress, o.PprofBindAddress)
	}
	if !o.TokenBootstrap.Enabled || o.TokenBootstrap.APIServer != "" {
		t.Errorf("token bootstrap defaults %+v", o.TokenBootstrap)
	}
	if o.Machine.CreationTimeout != 20*time.Minute || o.Machine.DrainTimeout != 2*time.Hour || o.Machine.MaxEvictRetries != 10 {
		t.Errorf("lifecycle defaults %+v", o.Machine)
	}
}

// Every refused value names its flag and says what is wrong.
func TestValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings, each expected in the error
	}{
		{"zero duration", []string{"--machine-creation-timeout=0"},
			[]string{"--machine-creation-timeout: must be a positive duration, got 0s"}},
		{"negative duration", []string{"--volume-detach-timeout=-1s"},
			[]string{"--volume-detach-timeout: must be a positive duration, got -1s"}},
		{"renew not below lease", []string{"--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=3s"},
			[]string{"--leader-elect-renew-deadline: 3s must be shorter than --leader-elect-lease-duration 3s"}},
		{"retry too long", []string{"--leader-elect-retry-period=9s"},
			[]string{"--leader-elect-retry-period: 9s is too long: --leader-elect-renew-deadline 10s must be more than 1.2 times it"}},
		{"backoff base above cap", []string{"--backoff-base=10m"},
			[]string{"--backoff-base: 10m0s is longer than --backoff-cap 5m0s"}},
		{"long backoff base above cap", []string{"--long-backoff-cap=1s"},
			[]string{"--long-backoff-base: 1m0s is longer than --long-backoff-cap 1s"}},
		{"node condition", []string{"--node-conditions=KernelDeadlock,not ok"},
			[]string{`--node-conditions: "not ok" is not a Node condition type`}},
		{"workers", []string{"--machine-workers=0", "--machineset-workers=-1"},
			[]string{"--machine-workers: must be at least 1, got 0", "--machineset-workers: must be at least 1, got -1"}},
		{"create concurrency", []string{"--max-concurrent-creates=0"}, []string{"--max-concurrent-creates: must be at least 1, got 0"}},
		{"negative retries", []string{"--max-evict-retries=-1"}, []string{"--max-evict-retries: must not be negative"}},
		{"safety up", []string{"--safety-up=0", "--safety-down=0"},
			[]string{"--safety-up: must be at least 1, got 0", "--safety-down: must be between 1 and --safety-up (0), got 0"}},
		{"safety down above up", []string{"--safety-up=2", "--safety-down=3"}, []string{"--safety-down: must be between 1 and --safety-up (2), got 3"}},
		{"qps", []string{"--kube-api-qps=0", "--kube-api-burst=0"},
			[]string{"--kube-api-qps: must be positive", "--kube-api-burst: must be at least 1"}},
		{"driver name", []string{"--driver=Sim_1=unix:///s.sock"}, []string{`--driver: "Sim_1" is not a valid name`}},
		{"driver twice", []string{"--driver=sim=unix:///a.sock", "--driver=sim=unix:///b.sock"},
			[]string{`--driver: "sim" is given twice`}},
		{"driver relative socket", []string{"--driver=sim=unix://sim.sock"},
			[]string{`--driver: sim: endpoint "unix://sim.sock": the socket path must be absolute`}},
		{"driver scheme", []string{"--driver=sim=http://localhost:80"},
			[]string{`--driver: sim: endpoint "http://localhost:80": want unix:///absolute/path.sock or tcp://host:port (or in-process:sim)`}},
		{"driver port zero", []string{"--driver=sim=tcp://127.0.0.1:0"},
			[]string{`port "0" is not a number from 1 to 65535`}},
		{"driver TLS without a CA", []string{"--driver-tls-cert=/c.pem", "--driver-tls-key=/k.pem"},
			[]string{"--driver-tls-ca: required with --driver-tls-cert and --driver-tls-key"}},
		{"driver TLS without a certificate", []string{"--driver-tls-ca=/ca.pem"},
			[]string{"--driver-tls-cert: required with --driver-tls-ca", "--driver-tls-key: required"}},
		{"namespace", []string{"--namespace=Team_A"}, []string{`--namespace: "Team_A" is not a valid name`}},
		{"lease name", []string{"--leader-elect-id=Bad Name"}, []string{`--leader-elect-id: "Bad Name" is not a valid Lease name`}},
		{"metrics address", []string{"--metrics-bind-address=8080"}, []string{`--metrics-bind-address: "8080" is not host:port`}},
		{"memory limit zero", []string{"--memory-limit=0"}, []string{`--memory-limit: "0" is not auto, none or a positive quantity such as 100Mi`}},
		{"memory limit word", []string{"--memory-limit=lots"}, []string{`--memory-limit: "lots" is not auto`}},
		{"pprof zero is not off", []string{"--pprof-bind-address=0"}, []string{`--pprof-bind-address: "0" is not host:port`}},
		{"token bootstrap API server", []string{"--token-bootstrap-api-server=http://api.example"},
			[]string{`--token-bootstrap-api-server: "http://api.example" is not an https URL with a host`}},
		{"all at once", []string{"--machine-health-timeout=0", "--machine-drain-timeout=0"},
			[]string{"--machine-health-timeout: must be", "--machine-drain-timeout: must be"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = o.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			var usage *cli.UsageError
			if !errors.As(err, &usage) || cli.ExitCode(err) != 2 {
				t.Errorf("not a usage error (exit 2): %T %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// A value that does not parse is refused by the command with a usage
// error naming the flag, before anything starts.
func TestCommandRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--driver=sim"}, `invalid argument "sim" for "--driver" flag: want NAME=ENDPOINT`},
		{[]string{"--machine-drain-timeout=soon"}, `invalid argument "soon" for "--machine-drain-timeout" flag`},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"extra"}, `unknown command "extra"`},
		{[]string{"--machine-creation-timeout=0"}, "--machine-creation-timeout: must be a positive duration"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := NewCommand()
			cmd.SetArgs(tc.args)
			cmd.SetOut(&strings.Builder{})
			cmd.SetErr(&strings.Builder{})
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want it to contain %q", err, tc.want)
			}
			if code := cli.ExitCode(err); code != 2 {
				t.Errorf("exit code %d, want 2 (usage)", code)
			}
		})
	}
}
