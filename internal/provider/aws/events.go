package aws

import (
	"context"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// ReceiveEvents is not implemented yet: the interruption queue comes next.
func (d *Driver) ReceiveEvents(context.Context, *driver.ReceiveEventsRequest) (*driver.ReceiveEventsResponse, error) {
	return nil, driver.Errorf(driver.Unimplemented, "ReceiveEvents is not implemented")
}
