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
	var vm string
	max := relay.DefaultMaxConnections
	cmd := &cobra.Command{
		Use:   libvirt.RelayCommand + " [--vm DOMAIN --max-connections N] HOST:PORT",
		Short: "Carry one guest connection (stdin/stdout) to HOST:PORT; QEMU runs it for a guest forward",
		Long: `relay connects to HOST:PORT and copies its stdin to that connection and the
connection to its stdout, until both ends are done. QEMU's user-mode network
runs it for each connection a guest opens to a guest forward's address, with
that connection as stdin, stdout and stderr, so it never prints anything.
With --vm, at most --max-connections relays of that VM run at once: one
more ends at once, which closes its connection (a guest opening
connections in a loop would otherwise fill the host with processes).`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if vm != "" {
				release, ok := relay.TakeSlot(vm, max)
				if !ok {
					return nil
				}
				defer release()
			}
			guest, err := relay.Stdio()
			if err == nil {
				// Its error is not returned: it would be printed, into
				// the guest's connection.
				_ = relay.Run(cmd.Context(), guest, args[0])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&vm, "vm", "", "the domain whose guest opened the connection: its relays share --max-connections")
	cmd.Flags().IntVar(&max, "max-connections", max, "how many relays of --vm's connections run at once")
	return cmd
}
