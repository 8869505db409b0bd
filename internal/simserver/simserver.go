// Package simserver is the millwright-sim program: the simulated cloud
// (internal/provider/sim) as a process of its own, serving the driver
// over gRPC like any out-of-process provider, its admin HTTP API for
// injecting faults, and registering its VMs' Nodes in a cluster.
// cmd/millwright-sim only calls NewCommand, so this can be tested without
// building the binary.
package simserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// adminShutdownTimeout bounds the admin API's graceful stop: its requests
// are quick, and a stuck client must not hold the sim up.
const adminShutdownTimeout = 5 * time.Second

// Options are millwright-sim's settings, one field per flag.
type Options struct {
	// Endpoint serves the driver: unix:///path.sock or tcp://host:port.
	// Empty: $MILLWRIGHT_DRIVER_ENDPOINT.
	Endpoint string
	// AdminAddress serves the admin HTTP API; empty: off.
	AdminAddress string
	// Kubeconfig reaches the cluster the Nodes register in. Empty:
	// KUBECONFIG, in-cluster, ~/.kube/config.
	Kubeconfig string
	// KubeAPIQPS and KubeAPIBurst bound the Node writes to the API server.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// NodeMode is kwok or builtin (see sim.NodeMode).
	NodeMode string
	// NodeWorkers register and update Nodes concurrently.
	NodeWorkers int
	// NodeResync is how often every live VM's Node is checked again.
	NodeResync time.Duration
	// SnapshotPath keeps the cloud across restarts; empty: memory only.
	SnapshotPath string
	// Name is the driver's name, as MachineClass spec.provider names it.
	Name string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string
	// InfraController runs the SimMachine controller (contract provider)
	// in the sim process, against the same cloud the driver serves.
	InfraController bool
	// InfraWorkers is how many SimMachines are reconciled at once.
	InfraWorkers int
}

// NewOptions returns the defaults of every flag.
func NewOptions() *Options {
	return &Options{
		AdminAddress: "127.0.0.1:8090",
		KubeAPIQPS:   50,
		KubeAPIBurst: 100,
		NodeMode:     string(sim.NodeModeKwok),
		NodeWorkers:  8,
		NodeResync:   5 * time.Minute,
		Name:         sim.DefaultName,
		LogLevel:     "info",
		LogFormat:    "text",
		InfraWorkers: 8,
	}
}

// Run serves the sim until ctx ends, then stops gracefully: calls in
// flight finish, the admin API closes, and a last snapshot is saved. o
// must have passed Validate. Any part failing stops the others.
func Run(ctx context.Context, o *Options, log *slog.Logger) error {
	cfg, err := cli.RestConfig(o.Kubeconfig, o.KubeAPIQPS, o.KubeAPIBurst, "millwright-sim")
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return fmt.Errorf("cluster client: %w", err)
	}
	s, err := sim.New(sim.Options{
		Name: o.Name, Client: c, NodeMode: sim.NodeMode(o.NodeMode),
		NodeWorkers: o.NodeWorkers, NodeResync: o.NodeResync,
		SnapshotPath: o.SnapshotPath, Logger: log,
	})
	if err != nil {
		return err
	}
	// Listen before serving anything, so a busy port fails the start at
	// once rather than leaving a sim without its admin API.
	var adminLis net.Listener
	if o.AdminAddress != "" {
		if adminLis, err = net.Listen("tcp", o.AdminAddress); err != nil {
			return fmt.Errorf("admin API: %w", err)
		}
	}

	var mgr ctrl.Manager
	if o.InfraController {
		if mgr, err = newInfraManager(cfg, s, o.InfraWorkers, log); err != nil {
			return err
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Start(gctx) })
	if mgr != nil {
		g.Go(func() error { return mgr.Start(gctx) })
	}
	g.Go(func() error { return driver.ServeEndpoint(gctx, o.Endpoint, s) })
	if adminLis != nil {
		srv := &http.Server{Handler: s.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}
		log.Info("serving admin API", "address", adminLis.Addr().String())
		g.Go(func() error {
			if err := srv.Serve(adminLis); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("admin API: %w", err)
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
			defer cancel()
			return srv.Shutdown(sctx)
		})
	}
	log.Info("sim running", "driver", o.Name, "endpoint", o.Endpoint, "nodeMode", o.NodeMode, "snapshot", o.SnapshotPath, "infraController", o.InfraController)
	err = g.Wait()
	log.Info("sim stopped")
	return err
}

// Validate checks every flag at once, one line per problem, as a
// cli.UsageError. An empty Endpoint is taken from the environment first.
func (o *Options) Validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	if err := cli.ServeEndpoint(&o.Endpoint); err != nil {
		bad("endpoint", "%v", err)
	}
	if err := cli.CheckListenAddress(o.AdminAddress, false); err != nil {
		bad("admin-address", "%v", err)
	}
	switch sim.NodeMode(o.NodeMode) {
	case sim.NodeModeKwok, sim.NodeModeBuiltin:
	default:
		bad("node-mode", "%q: want %s or %s", o.NodeMode, sim.NodeModeKwok, sim.NodeModeBuiltin)
	}
	if o.NodeWorkers < 1 {
		bad("node-workers", "must be at least 1, got %d", o.NodeWorkers)
	}
	if o.NodeResync <= 0 {
		bad("node-resync", "must be a positive duration, got %s", o.NodeResync)
	}
	if o.KubeAPIQPS <= 0 {
		bad("kube-api-qps", "must be positive, got %g", o.KubeAPIQPS)
	}
	if o.KubeAPIBurst < 1 {
		bad("kube-api-burst", "must be at least 1, got %d", o.KubeAPIBurst)
	}
	if o.Name == "" {
		bad("name", "must not be empty")
	}
	if o.InfraWorkers < 1 {
		bad("infra-workers", "must be at least 1, got %d", o.InfraWorkers)
	}
	if _, err := cli.ParseLevel(o.LogLevel); err != nil {
		bad("log-level", "%v", err)
	}
	if err := cli.CheckLogFormat(o.LogFormat); err != nil {
		bad("log-format", "%v", err)
	}
	if len(errs) == 0 {
		return nil
	}
	return &cli.UsageError{Err: errors.Join(errs...)}
}
