package simserver

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/sim"
)

// AddFlags defines every flag on fs, bound to o; o's values are the defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.PluginFlags.AddFlags(fs)
	fs.StringVar(&o.AdminAddress, "admin-address", o.AdminAddress, "address of the admin HTTP API (faults, outages, VM listing); empty: off")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cluster the Nodes register in; empty: $KUBECONFIG, in-cluster, ~/.kube/config")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "queries per second to the API server")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "burst of queries to the API server")
	fs.StringVar(&o.NodeMode, "node-mode", o.NodeMode, "kwok (a running kwok keeps the Nodes Ready) or builtin (the sim does)")
	fs.IntVar(&o.NodeWorkers, "node-workers", o.NodeWorkers, "Nodes registered and updated concurrently")
	fs.DurationVar(&o.NodeResync, "node-resync", o.NodeResync, "check every live VM's Node again this often")
	fs.StringVar(&o.SnapshotPath, "snapshot", o.SnapshotPath, "JSON file keeping the cloud across restarts; empty: memory only")
	fs.BoolVar(&o.InfraController, "infra-controller", o.InfraController, "also run the SimMachine controller (infrastructure.millwright.dev, a contract provider) on the cluster of --kubeconfig, making its VMs in this sim's cloud, and the SimMachineTemplate controller, which fills the templates' status.capacity")
	fs.IntVar(&o.InfraWorkers, "infra-workers", o.InfraWorkers, "SimMachines reconciled concurrently (with --infra-controller)")
}

// NewCommand returns the millwright-sim command; logs go to logOut. Execute
// it with ExecuteContext: the context's end is the graceful shutdown.
// Errors are returned, not printed; a bad command line is a cli.UsageError.
func NewCommand(logOut io.Writer) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "millwright-sim",
		Short: "Run the simulated cloud as a driver plugin",
		Long: `millwright-sim is Millwright's simulated cloud as its own program: it serves
the "` + sim.DefaultName + `" driver over gRPC at --endpoint, an admin HTTP API at
--admin-address, and registers its VMs' Nodes in the cluster of --kubeconfig.`,
		Example: `  millwright-sim --endpoint unix:///tmp/sim.sock --node-mode builtin --snapshot /tmp/sim.json`,
	}
	o.AddFlags(cmd.Flags())
	return cli.PluginCommand(cmd, logOut, &o.PluginFlags, o.Validate, func(ctx context.Context, log *slog.Logger) error {
		return Run(ctx, o, log)
	})
}
