package aws

import (
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver/drivertest"
)

// invalidSpec is refused: no AMI.
const invalidSpec = `{"region":"us-east-1","instanceType":"t3.micro"}`

// TestConformance runs Millwright's driver conformance suite against the
// driver in-process, on moto's EC2, and checks that no instance of the
// run is left live afterwards.
func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Config{
		Driver:       newDriver(t, ""),
		Class:        class("conformance", validSpec),
		Secret:       testSecret(),
		InvalidClass: class("conformance-invalid", invalidSpec),
	})
	if live := clusterInstances(t, liveStates...); len(live) != 0 {
		t.Errorf("%d instances left live after the suite", len(live))
	}
}

// TestConformanceOverGRPC runs the suite against the driver as
// millwright-aws serves it: behind driver.ServeEndpoint, called through
// driver.Dial, so a code or message lost on the wire shows.
func TestConformanceOverGRPC(t *testing.T) {
	drivertest.Run(t, drivertest.Config{
		Driver:       drivertest.OverGRPC(t, newDriver(t, "")),
		Class:        class("conformance-grpc", validSpec),
		Secret:       testSecret(),
		InvalidClass: class("conformance-grpc-invalid", invalidSpec),
	})
	if live := clusterInstances(t, liveStates...); len(live) != 0 {
		t.Errorf("%d instances left live after the suite", len(live))
	}
}
