package drivertest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// OverGRPC serves d as a driver plugin on a unix socket of the test's own
// and returns a client of it, so the suite can run through the wire (where
// a code, message or optional-method list could be lost). Both stop when
// the test ends.
func OverGRPC(t testing.TB, d driver.Driver) driver.Driver {
	t.Helper()
	endpoint := "unix://" + filepath.Join(t.TempDir(), "driver.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- driver.ServeEndpoint(ctx, endpoint, d) }()
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
	return c
}
