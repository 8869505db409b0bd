package libvirt

import (
	"fmt"
	"path/filepath"
	"regexp"
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
