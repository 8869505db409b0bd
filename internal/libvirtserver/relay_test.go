package libvirtserver

import (
	"net"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/relay"
)

// A relay of a VM whose --max-connections relays all run ends at once,
// without connecting to the host: the guest's connection closes, and no
// process stays behind for it.
func TestRelayBeyondItsVMsSlotsEndsAtOnce(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	vm := "mw-" + t.Name()
	release, ok := relay.TakeSlot(vm, 1)
	if !ok {
		t.Fatal("the only slot was refused")
	}
	defer release()

	cmd := relayCommand()
	cmd.SetArgs([]string{"--vm", vm, "--max-connections", "1", lis.Addr().String()})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	_ = lis.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := lis.Accept(); err == nil {
		c.Close()
		t.Fatal("a relay beyond its VM's --max-connections connected to the host")
	}
}
