package driverpolicy_test

import (
	"testing"

	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// The error code machinefacts reads as "the provider had no capacity" is
// the name the machine controller records for the driver's
// ResourceExhausted (status.lastOperation.errorCode is a code's String).
func TestOutOfCapacityIsResourceExhausted(t *testing.T) {
	if got, want := machinefacts.ErrorCodeOutOfCapacity, driver.ResourceExhausted.String(); got != want {
		t.Errorf("machinefacts.ErrorCodeOutOfCapacity = %q, want driver.ResourceExhausted's name %q", got, want)
	}
}
