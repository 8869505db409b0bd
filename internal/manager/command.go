package manager

import (
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/millwright-dev/millwright/internal/cli"
)

// NewCommand returns the millwright-manager command. Execute it with
// ExecuteContext: the context's end (ctrl.SetupSignalHandler in main) is
// the graceful shutdown. Errors are returned, not printed; a bad command
// line is a cli.UsageError.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "millwright-manager",
		Short: "Run Millwright's machine controllers",
		Long: `millwright-manager runs Millwright's core controllers against a control
cluster (where Machines live) and a target cluster (where their Nodes live;
by default the same cluster), with the drivers given by --driver.`,
		Example: `  millwright-manager --kubeconfig ~/.kube/config --driver sim=unix:///tmp/sim.sock
  millwright-manager --driver sim=in-process:sim --namespace demo`,
		Args:          cli.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			logger := zap.New(zap.UseFlagOptions(&o.Zap))
			ctrl.SetLogger(logger)
			klog.SetLogger(logger) // client-go's leader election and informers log through klog
			return Run(cmd.Context(), o)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cli.UsageError{Err: err}
	})
	return cmd
}
