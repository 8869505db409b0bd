package relay

import (
	"fmt"
	"net"
)

// DefaultMaxConnections is how many connections of one VM the relays
// carry at once by default: a node's agent or kubelet keeps a few to the
// API server, never dozens.
const DefaultMaxConnections = 32

// TakeSlot takes one of the max connection slots of the VM named vm and
// returns its release, or ok false when all are taken. QEMU spawns a relay
// process for every connection a guest opens through a guest forward, so
// a guest opening connections in a loop would fill the host with
// processes; a relay without a slot ends at once, which closes its
// connection. A slot is an abstract unix socket bound for the relay's life
// (Linux): no file to create with QEMU's user's rights, and the kernel
// frees it when the process ends, however it ends.
func TakeSlot(vm string, max int) (release func(), ok bool) {
	for i := range max {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: slotName(vm, i), Net: "unix"})
		if err == nil {
			return func() { _ = l.Close() }, true
		}
	}
	return nil, false
}

// slotName is the abstract socket of slot i of vm: a leading @ puts a
// name in Linux's abstract namespace.
func slotName(vm string, i int) string {
	return fmt.Sprintf("@millwright-relay/%s/%d", vm, i)
}
