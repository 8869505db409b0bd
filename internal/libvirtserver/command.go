package libvirtserver

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/libvirt"
)

// AddFlags defines every flag on fs, bound to o; o's values are the defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.PluginFlags.AddFlags(fs)
	fs.StringVar(&o.HealthAddress, "health-address", o.HealthAddress, "address of /healthz and /readyz (ready while libvirt answers); empty: off")
	fs.StringVar(&o.DefaultURI, "default-uri", o.DefaultURI, "libvirt URI of the classes whose providerSpec names no uri")
	fs.StringVar(&o.ConsoleDir, "console-dir", o.ConsoleDir, "directory on the libvirt host where each VM's serial console is logged")
	fs.StringVar(&o.QEMULogDir, "qemu-log-dir", o.QEMULogDir, "libvirt's directory of per-domain QEMU logs on the libvirt host (qemu.conf's; the default is qemu:///system's), from which a deletion removes the domain's")
	fs.DurationVar(&o.Reconnect, "reconnect", o.Reconnect, "how often an unreachable libvirt is tried again")
	fs.StringVar(&o.RelayBinary, "relay-binary", o.RelayBinary, "program on the libvirt host that QEMU runs as \"PROGRAM relay HOST:PORT\" for each connection through a guest forward (executable by libvirt's QEMU user); empty: this program")
	fs.StringSliceVar(&o.Policy.AllowedURIs, "allowed-uri", o.Policy.AllowedURIs, "libvirt URI a class's providerSpec may name besides --default-uri (repeat for several)")
	fs.StringSliceVar(&o.Policy.BootFileDirs, "boot-file-dir", o.Policy.BootFileDirs, "directory on the libvirt host holding the kernels and initramfs images classes may boot (repeat for several)")
	fs.StringSliceVar(&o.Policy.AllowedForwards, "allowed-forward", o.Policy.AllowedForwards, "HOST:PORT (or HOST, every port) on the libvirt host a class's guest forward may reach (repeat for several); none: guest forwards are refused")
	fs.BoolVar(&o.Policy.AllowUnrestrictedNetwork, "allow-unrestricted-network", o.Policy.AllowUnrestrictedNetwork, "let classes ask for an unrestricted user-mode network (restrict: false), whose guests reach every service on the libvirt host's loopback")
	fs.IntVar(&o.Policy.RelayMaxConnections, "relay-max-connections", o.Policy.RelayMaxConnections, "how many connections of one VM through its guest forwards are relayed at once")
	fs.DurationVar(&o.KVMProbeTimeout, "kvm-probe-timeout", o.KVMProbeTimeout, "how long the probe of domainType auto waits for a KVM guest to boot before deciding on qemu")
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
		Example: `  millwright-libvirt --endpoint unix:///tmp/libvirt.sock`,
	}
	o.AddFlags(cmd.Flags())
	cmd.AddCommand(relayCommand())
	// No completion command: the subcommand is for QEMU, not for shells.
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cli.PluginCommand(cmd, logOut, &o.PluginFlags, o.Validate, func(ctx context.Context, log *slog.Logger) error {
		return Run(ctx, o, log)
	})
}
