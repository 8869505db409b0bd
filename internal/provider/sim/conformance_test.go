package sim

import (
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver/drivertest"
)

// TestConformance runs Millwright's driver conformance suite against the
// sim in-process: once plain, once with latency on every call, so that
// concurrent creates overlap inside the sim.
func TestConformance(t *testing.T) {
	for name, spec := range map[string]string{
		"Plain":       basicSpec,
		"WithLatency": withFaults(`{"seed":1,"create":{"latency":"2ms","jitter":"3ms"},"delete":{"latency":"1ms"},"getStatus":{"jitter":"2ms"},"list":{"latency":"1ms"}}`),
	} {
		t.Run(name, func(t *testing.T) {
			s, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			drivertest.Run(t, drivertest.Config{
				Driver:       s,
				Class:        class("conformance", spec),
				InvalidClass: class("conformance-invalid", `{"region":"local","zones":[]}`),
			})
		})
	}
}
