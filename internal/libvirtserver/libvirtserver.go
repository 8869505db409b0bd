// Package libvirtserver is the millwright-libvirt program: the libvirt
// driver (internal/provider/libvirt) served over gRPC like any
// out-of-process provider, with /healthz and /readyz over HTTP (ready while
// libvirt answers). cmd/millwright-libvirt only calls NewCommand, so this
// can be tested without building the binary.
package libvirtserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/libvirt"
	"github.com/millwright-dev/millwright/internal/relay"
	"github.com/millwright-dev/millwright/pkg/driver"
)

const (
	// readyTimeout bounds one /readyz check: a hung libvirtd is not ready.
	readyTimeout = 5 * time.Second
)

// Options are millwright-libvirt's settings, one field per flag.
type Options struct {
	// PluginFlags are the endpoint, name and log flags.
	cli.PluginFlags
	// HealthAddress serves /healthz and /readyz; empty: off.
	HealthAddress string
	// DefaultURI is the libvirt daemon of classes whose providerSpec names none.
	DefaultURI string
	// ConsoleDir is where the VMs' serial consoles are logged, on the
	// libvirt host.
	ConsoleDir string
	// QEMULogDir is libvirt's directory of per-domain QEMU logs on the
	// libvirt host; a deletion removes the domain's.
	QEMULogDir string
	// Reconnect is how often an unreachable libvirt is tried again.
	Reconnect time.Duration
	// KVMProbeTimeout bounds the KVM probe of domainType auto.
	KVMProbeTimeout time.Duration
	// RelayBinary is what QEMU runs (`RelayBinary relay HOST:PORT`) for
	// each connection through a guest forward; empty: this program
	// (Validate fills it in).
	RelayBinary string
	// Policy is what classes may use of the libvirt host.
	Policy libvirt.Policy
}

// NewOptions returns the defaults of every flag.
func NewOptions() *Options {
	return &Options{
		PluginFlags:     cli.NewPluginFlags(libvirt.DefaultName),
		HealthAddress:   "127.0.0.1:8091",
		DefaultURI:      libvirt.DefaultURI,
		ConsoleDir:      libvirt.DefaultConsoleDir,
		QEMULogDir:      libvirt.DefaultQEMULogDir,
		Reconnect:       5 * time.Second,
		KVMProbeTimeout: libvirt.DefaultProbeTimeout,
		Policy: libvirt.Policy{
			BootFileDirs:        []string{libvirt.DefaultBootFileDir},
			RelayMaxConnections: relay.DefaultMaxConnections,
		},
	}
}

// self is this program's path, for the relay: its default is the
// driver's own binary, which has the relay subcommand. Empty if unknown
// (Validate then asks for --relay-binary).
func self() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// Run serves the driver until ctx ends, then stops gracefully. o must have
// passed Validate. An unreachable libvirt does not stop it: it is logged,
// retried every o.Reconnect, /readyz fails, and driver calls answer
// Unavailable (Machines wait) until libvirt answers.
func Run(ctx context.Context, o *Options, log *slog.Logger) error {
	d := libvirt.New(libvirt.Options{
		Name: o.Name, DefaultURI: o.DefaultURI, ConsoleDir: o.ConsoleDir, QEMULogDir: o.QEMULogDir,
		ProbeTimeout: o.KVMProbeTimeout, RelayBinary: o.RelayBinary, Policy: o.Policy, Logger: log,
	})
	defer d.Close()
	// Listen before serving anything, so a busy port fails the start at once.
	var healthLis net.Listener
	if o.HealthAddress != "" {
		var err error
		if healthLis, err = net.Listen("tcp", o.HealthAddress); err != nil {
			return fmt.Errorf("health address: %w", err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.Start(gctx, o.Reconnect) })
	g.Go(func() error { return driver.ServeEndpoint(gctx, o.Endpoint, d) })
	if healthLis != nil {
		cli.ServeHTTP(gctx, g, log, "health checks", healthLis, cli.HealthHandler(readyTimeout, d.Ready))
	}
	log.Info("libvirt driver running", "driver", o.Name, "endpoint", o.Endpoint, "defaultURI", o.DefaultURI, "consoleDir", o.ConsoleDir)
	err := g.Wait()
	log.Info("libvirt driver stopped")
	return err
}

// Validate checks every flag at once, one line per problem, as a
// cli.UsageError. An empty Endpoint is taken from the environment first,
// an empty RelayBinary is this program.
func (o *Options) Validate() error {
	var c cli.Checks
	o.PluginFlags.Check(&c)
	if err := cli.CheckListenAddress(o.HealthAddress, false); err != nil {
		c.Bad("health-address", "%v", err)
	}
	if err := libvirt.CheckURI(o.DefaultURI); err != nil {
		c.Bad("default-uri", "%v", err)
	}
	if o.ConsoleDir == "" {
		c.Bad("console-dir", "must not be empty")
	}
	if o.QEMULogDir == "" {
		c.Bad("qemu-log-dir", "must not be empty")
	}
	if o.Reconnect <= 0 {
		c.Bad("reconnect", "must be a positive duration, got %s", o.Reconnect)
	}
	if o.RelayBinary == "" {
		o.RelayBinary = self()
	}
	if err := libvirt.CheckRelayBinary(o.RelayBinary); err != nil {
		c.Bad("relay-binary", "%v", err)
	}
	for _, u := range o.Policy.AllowedURIs {
		if err := libvirt.CheckURI(u); err != nil {
			c.Bad("allowed-uri", "%v", err)
		}
	}
	for _, d := range o.Policy.BootFileDirs {
		if !filepath.IsAbs(d) {
			c.Bad("boot-file-dir", "%q is not an absolute path", d)
		}
	}
	if o.Policy.RelayMaxConnections < 1 {
		c.Bad("relay-max-connections", "must be at least 1, got %d", o.Policy.RelayMaxConnections)
	}
	if o.KVMProbeTimeout <= 0 {
		c.Bad("kvm-probe-timeout", "must be a positive duration, got %s", o.KVMProbeTimeout)
	}
	return c.Err()
}
