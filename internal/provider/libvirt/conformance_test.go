package libvirt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
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
	endpoint := "unix://" + filepath.Join(t.TempDir(), "libvirt.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- driver.ServeEndpoint(ctx, endpoint, newDriver(t)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeEndpoint: %v", err)
		}
	})
	c, err := driver.Dial(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	drivertest.Run(t, drivertest.Config{
		Driver:       c,
		Class:        class("conformance-grpc", imageSpec()),
		InvalidClass: class("conformance-grpc-invalid", invalidSpec),
	})
}
