package sim

import (
	"context"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// ReceiveEvents is not implemented yet.
func (s *Sim) ReceiveEvents(context.Context, *driver.ReceiveEventsRequest) (*driver.ReceiveEventsResponse, error) {
	return nil, driver.Errorf(driver.Unimplemented, "ReceiveEvents is not implemented")
}
