package libvirt

import (
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/millwright-dev/millwright/pkg/driver/drivertest"
)

// invalidSpec is refused: no boot source.
const invalidSpec = `{"memory":"128Mi"}`

// TestConformance runs Millwright's driver conformance suite against the
// driver in-process, with real domains.
func TestConformance(t *testing.T) {
	d := newDriver(t)
	drivertest.Run(t, drivertest.Config{
		Driver:       d,
		Class:        class("conformance", imageSpec()),
		InvalidClass: class("conformance-invalid", invalidSpec),
		RenameHost:   renameHost(d),
	})
}

// renameHost makes the libvirt daemon answer another host name from the
// next connection on, as a renamed host, or one whose name moved between
// its fully qualified and short forms, would: providerIDs embed that name.
func renameHost(d *Driver) func(t *testing.T) {
	return func(t *testing.T) {
		d.conns.mu.Lock()
		d.conns.hostName = func(*golibvirt.Libvirt) (string, error) { return "renamed.example", nil }
		d.conns.mu.Unlock()
		d.conns.closeAll()
	}
}

// TestConformanceOverGRPC runs the suite against the driver as
// millwright-libvirt serves it: behind driver.ServeEndpoint, called through
// driver.Dial, so a code or message lost on the wire shows.
func TestConformanceOverGRPC(t *testing.T) {
	d := newDriver(t)
	drivertest.Run(t, drivertest.Config{
		Driver:       drivertest.OverGRPC(t, d),
		Class:        class("conformance-grpc", imageSpec()),
		InvalidClass: class("conformance-grpc-invalid", invalidSpec),
		RenameHost:   renameHost(d),
	})
}
