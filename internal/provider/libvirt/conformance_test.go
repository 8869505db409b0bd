package libvirt

import (
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver/drivertest"
)

// invalidSpec is refused: no boot source.
const invalidSpec = `{"memory":"128Mi"}`

// TestConformance runs Millwright's driver conformance suite against the
// driver in-process, with real domains.
func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Config{
		Driver:       newDriver(t),
		Class:        class("conformance", imageSpec()),
		InvalidClass: class("conformance-invalid", invalidSpec),
	})
}

// TestConformanceOverGRPC runs the suite against the driver as
// millwright-libvirt serves it: behind driver.ServeEndpoint, called through
// driver.Dial, so a code or message lost on the wire shows.
func TestConformanceOverGRPC(t *testing.T) {
	drivertest.Run(t, drivertest.Config{
		Driver:       drivertest.OverGRPC(t, newDriver(t)),
		Class:        class("conformance-grpc", imageSpec()),
		InvalidClass: class("conformance-grpc-invalid", invalidSpec),
	})
}
