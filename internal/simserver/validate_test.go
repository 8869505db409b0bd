package simserver

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("millwright-sim", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse: %v", err)
	}
	return o
}

func TestFlags(t *testing.T) {
	o := parse(t, "--endpoint=unix:///tmp/s.sock", "--admin-address=127.0.0.1:9999", "--kubeconfig=/k",
		"--node-mode=builtin", "--snapshot=/tmp/s.json", "--node-workers=2", "--node-resync=1m", "--name=sim2",
		"--infra-controller", "--infra-workers=3")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	want := Options{
		PluginFlags:  cli.PluginFlags{Endpoint: "unix:///tmp/s.sock", Name: "sim2", LogLevel: "info", LogFormat: "text"},
		AdminAddress: "127.0.0.1:9999", Kubeconfig: "/k",
		KubeAPIQPS: 50, KubeAPIBurst: 100, NodeMode: "builtin", NodeWorkers: 2, NodeResync: time.Minute,
		SnapshotPath:    "/tmp/s.json",
		InfraController: true, InfraWorkers: 3}
	if *o != want {
		t.Errorf("got %+v\nwant %+v", *o, want)
	}
	if d := NewOptions(); d.NodeMode != "kwok" || d.AdminAddress != "127.0.0.1:8090" || d.InfraController || d.InfraWorkers != 8 {
		t.Errorf("defaults: node mode %q, admin %q, infra controller %v with %d workers", d.NodeMode, d.AdminAddress, d.InfraController, d.InfraWorkers)
	}
}

// The endpoint may come from the environment, as for any driver plugin.
func TestEndpointFromEnvironment(t *testing.T) {
	t.Setenv(driver.EndpointEnv, "tcp://127.0.0.1:7000")
	o := parse(t)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Endpoint != "tcp://127.0.0.1:7000" {
		t.Errorf("endpoint %q", o.Endpoint)
	}
}

func TestValidationErrors(t *testing.T) {
	t.Setenv(driver.EndpointEnv, "")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no endpoint", nil, []string{"--endpoint: required (or set MILLWRIGHT_DRIVER_ENDPOINT)"}},
		{"relative socket", []string{"--endpoint=unix://sim.sock"}, []string{"--endpoint: endpoint \"unix://sim.sock\": the socket path must be absolute"}},
		{"scheme", []string{"--endpoint=grpc://x:1"}, []string{"want unix:///absolute/path.sock or tcp://host:port"}},
		{"node mode", []string{"--endpoint=tcp://:1", "--node-mode=kind"}, []string{`--node-mode: "kind": want kwok or builtin`}},
		{"admin", []string{"--endpoint=tcp://:1", "--admin-address=8090"}, []string{`--admin-address: "8090" is not host:port`}},
		{"workers and resync", []string{"--endpoint=tcp://:1", "--node-workers=0", "--node-resync=0"},
			[]string{"--node-workers: must be at least 1, got 0", "--node-resync: must be a positive duration, got 0s"}},
		{"infra workers", []string{"--endpoint=tcp://:1", "--infra-workers=0"}, []string{"--infra-workers: must be at least 1, got 0"}},
		{"log", []string{"--endpoint=tcp://:1", "--log-level=loud", "--log-format=xml"},
			[]string{`--log-level: "loud": want debug, info, warn or error`, `--log-format: "xml": want text or json`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parse(t, tc.args...).Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			if cli.ExitCode(err) != 2 {
				t.Errorf("not a usage error: %T", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// A flag the program does not have is a usage error.
func TestCommandRefusesUnknownFlag(t *testing.T) {
	cmd := NewCommand(&strings.Builder{})
	cmd.SetArgs([]string{"--endpoint=tcp://:1", "--nodes=3"})
	err := cmd.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --nodes") || cli.ExitCode(err) != 2 {
		t.Fatalf("error %v (exit %d); want an unknown-flag usage error", err, cli.ExitCode(err))
	}
}
