package libvirtserver

import (
	"github.com/spf13/cobra"

	"github.com/millwright-dev/millwright/internal/provider/libvirt"
	"github.com/millwright-dev/millwright/internal/relay"
)

// relayCommand is the subcommand QEMU spawns for each connection a guest
// opens through a guest forward (docs/providers/libvirt.md, "The
// network"). It carries one guest connection, its stdin and stdout, to the
// host address it is given. Its stdin, stdout and stderr are all the
// guest's connection, so it prints nothing, errors included: a failure
// only ends the connection.
func relayCommand() *cobra.Command {
	return &cobra.Command{
		Use:   libvirt.RelayCommand + " HOST:PORT",
		Short: "Carry one guest connection (stdin/stdout) to HOST:PORT; QEMU runs it for a guest forward",
		Long: `relay connects to HOST:PORT and copies its stdin to that connection and the
connection to its stdout, until both ends are done. QEMU's user-mode network
runs it for each connection a guest opens to a guest forward's address, with
that connection as stdin, stdout and stderr, so it never prints anything.`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			guest, err := relay.Stdio()
			if err == nil {
				// Its error is not returned: it would be printed, into
				// the guest's connection.
				_ = relay.Run(cmd.Context(), guest, args[0])
			}
			return nil
		},
	}
}
