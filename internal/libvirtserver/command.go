package libvirtserver

import (
	"io"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/libvirt"
)

// AddFlags defines every flag on fs, bound to o; o's values are the defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Endpoint, "endpoint", o.Endpoint, "where to serve the driver: unix:///path.sock or tcp://host:port (default $MILLWRIGHT_DRIVER_ENDPOINT)")
	fs.StringVar(&o.HealthAddress, "health-address", o.HealthAddress, "address of /healthz and /readyz (ready while libvirt answers); empty: off")
	fs.StringVar(&o.DefaultURI, "default-uri", o.DefaultURI, "libvirt URI of the classes whose providerSpec names no uri")
	fs.StringVar(&o.ConsoleDir, "console-dir", o.ConsoleDir, "directory on the libvirt host where each VM's serial console is logged")
	fs.DurationVar(&o.Reconnect, "reconnect", o.Reconnect, "how often an unreachable libvirt is tried again")
	fs.DurationVar(&o.KVMProbeTimeout, "kvm-probe-timeout", o.KVMProbeTimeout, "how long the probe of domainType auto waits for a KVM guest to boot before deciding on qemu")
	fs.StringVar(&o.Name, "name", o.Name, "the driver's name, as MachineClass spec.provider names it")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "debug, info, warn or error")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "text or json")
}

// NewCommand returns the millwright-libvirt command; logs go to logOut.
// Execute it with ExecuteContext: the context's end is the graceful
// shutdown. Errors are returned, not printed; a bad command line is a
// cli.UsageError.
func NewCommand(logOut io.Writer) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "millwright-libvirt",
		Short: "Run Machines as libvirt domains: the libvirt driver plugin",
		Long: `millwright-libvirt serves the "` + libvirt.DefaultName + `" driver over gRPC at --endpoint: it runs
each Machine as a libvirt domain (a QEMU VM) on the libvirt daemon its class's
providerSpec names (--default-uri when it names none). See
docs/providers/libvirt.md for the providerSpec.`,
		Example:       `  millwright-libvirt --endpoint unix:///tmp/libvirt.sock`,
		Args:          cli.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			log := cli.NewLogger(logOut, o.LogLevel, o.LogFormat)
			// pkg/driver's server logs through the default logger.
			slog.SetDefault(log)
			return Run(cmd.Context(), o, log)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.UsageError{Err: err} })
	return cmd
}
