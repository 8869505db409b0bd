// Package simserver is the millwright-sim program: the simulated cloud
// (internal/provider/sim) as a process of its own, serving the driver
// over gRPC like any out-of-process provider, its admin HTTP API for
// injecting faults, and registering its VMs' Nodes in a cluster.
// cmd/millwright-sim only calls NewCommand, so this can be tested without
// building the binary.
package simserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"golang.org/x/sync/errgroup"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// Options are millwright-sim's settings, one field per flag.
type Options struct {
	// PluginFlags are the endpoint, name and log flags.
	cli.PluginFlags
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
	// InfraController runs the SimMachine controller (contract provider)
	// in the sim process, against the same cloud the driver serves.
	InfraController bool
	// InfraWorkers is how many SimMachines are reconciled at once.
	InfraWorkers int
}

// NewOptions returns the defaults of every flag.
func NewOptions() *Options {
	return &Options{
		PluginFlags:  cli.NewPluginFlags(sim.DefaultName),
		AdminAddress: "127.0.0.1:8090",
		KubeAPIQPS:   50,
		KubeAPIBurst: 100,
		NodeMode:     string(sim.NodeModeKwok),
		NodeWorkers:  8,
		NodeResync:   5 * time.Minute,
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
	nodes, err := newNodeCache(cfg)
	if err != nil {
		return err
	}
	s, err := sim.New(sim.Options{
		Name: o.Name, Client: c, NodeReader: nodes, NodeMode: sim.NodeMode(o.NodeMode),
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
	g.Go(func() error { return nodes.Start(gctx) })
	g.Go(func() error {
		// The Nodes are read from the cache: wait for its first list. The
		// driver is served meanwhile; its Node work waits in the queue.
		// When ctx ends first, Start still runs, to end at once and save
		// the snapshot.
		waitForNodeCache(gctx, nodes, log)
		return s.Start(gctx)
	})
	if mgr != nil {
		g.Go(func() error { return mgr.Start(gctx) })
	}
	g.Go(func() error { return driver.ServeEndpoint(gctx, o.Endpoint, s) })
	if adminLis != nil {
		cli.ServeHTTP(gctx, g, log, "admin API", adminLis, s.AdminHandler())
	}
	log.Info("sim running", "driver", o.Name, "endpoint", o.Endpoint, "nodeMode", o.NodeMode, "snapshot", o.SnapshotPath, "infraController", o.InfraController)
	err = g.Wait()
	log.Info("sim stopped")
	return err
}

// Validate checks every flag at once, one line per problem, as a
// cli.UsageError. An empty Endpoint is taken from the environment first.
func (o *Options) Validate() error {
	var c cli.Checks
	o.PluginFlags.Check(&c)
	if err := cli.CheckListenAddress(o.AdminAddress, false); err != nil {
		c.Bad("admin-address", "%v", err)
	}
	switch sim.NodeMode(o.NodeMode) {
	case sim.NodeModeKwok, sim.NodeModeBuiltin:
	default:
		c.Bad("node-mode", "%q: want %s or %s", o.NodeMode, sim.NodeModeKwok, sim.NodeModeBuiltin)
	}
	if o.NodeWorkers < 1 {
		c.Bad("node-workers", "must be at least 1, got %d", o.NodeWorkers)
	}
	if o.NodeResync <= 0 {
		c.Bad("node-resync", "must be a positive duration, got %s", o.NodeResync)
	}
	if o.KubeAPIQPS <= 0 {
		c.Bad("kube-api-qps", "must be positive, got %g", o.KubeAPIQPS)
	}
	if o.KubeAPIBurst < 1 {
		c.Bad("kube-api-burst", "must be at least 1, got %d", o.KubeAPIBurst)
	}
	if o.InfraWorkers < 1 {
		c.Bad("infra-workers", "must be at least 1, got %d", o.InfraWorkers)
	}
	return c.Err()
}
