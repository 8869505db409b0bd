package libvirt

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/millwright-dev/millwright/internal/relay"
)

// RelayCommand is the subcommand of the relay binary that QEMU runs for
// each connection through a guest forward: `RELAY relay HOST:PORT`
// (millwright-libvirt's; docs/providers/libvirt.md, "The network").
const RelayCommand = "relay"

// relayPath is what a relay binary's path may hold: it goes into QEMU's
// -netdev option, where a comma ends the value, and QEMU splits it into
// words as a shell would (spaces, quotes, backslashes, #).
var relayPath = regexp.MustCompile(`^/[A-Za-z0-9_./+@-]+$`)

// CheckRelayBinary checks that path can name the relay binary in QEMU's
// command line: absolute, made of letters, digits and _./+@- only.
func CheckRelayBinary(path string) error {
	if !relayPath.MatchString(path) || filepath.Clean(path) != path {
		return fmt.Errorf("%q is not a clean absolute path of letters, digits and _./+@- (QEMU's command line carries it)", path)
	}
	return nil
}

// relayCmd is how QEMU runs a relay: the binary, and how many connections
// of one VM its relays carry at once.
type relayCmd struct {
	binary string
	max    int
}

func (d *Driver) relay() relayCmd {
	max := d.opts.Policy.RelayMaxConnections
	if max <= 0 {
		max = relay.DefaultMaxConnections
	}
	return relayCmd{binary: d.opts.RelayBinary, max: max}
}

// command is the command QEMU runs for each connection the guest of domain
// vm opens to a guest forward to host. Every word is safe in QEMU's
// option value: the binary's and host's checks, a domain name of
// letters, digits, - and _.
func (r relayCmd) command(vm, host string) string {
	return r.binary + " " + RelayCommand + " --vm " + vm + " --max-connections " + strconv.Itoa(r.max) + " " + host
}
