package driver

import (
	"context"
	"time"

	driverv1 "github.com/millwright-dev/millwright/api/driver/v1"
)

// ReceiveEvents implements Driver over gRPC. The call may take req.Wait
// on top of the client's call timeout: it is a long poll.
func (c *Client) ReceiveEvents(ctx context.Context, req *ReceiveEventsRequest) (*ReceiveEventsResponse, error) {
	if c.callTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.callTimeout+max(req.Wait, 0))
		defer cancel()
	}
	c.waitReady(ctx)
	r, err := c.rpc.ReceiveEvents(ctx, &driverv1.ReceiveEventsRequest{
		Acknowledged: req.Acknowledged,
		WaitMillis:   req.Wait.Milliseconds(),
	})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &ReceiveEventsResponse{Events: eventsFromWire(r.GetEvents())}, nil
}

// ReceiveEvents ends its wait when the server starts to stop, and answers
// what it has (the acknowledgements are taken first): the manager asks
// the restarted plugin again.
func (s *grpcServer) ReceiveEvents(ctx context.Context, in *driverv1.ReceiveEventsRequest) (*driverv1.ReceiveEventsResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	resp, err := s.d.ReceiveEvents(ctx, &ReceiveEventsRequest{
		Acknowledged: in.GetAcknowledged(),
		Wait:         time.Duration(max(in.GetWaitMillis(), 0)) * time.Millisecond,
	})
	select {
	case <-s.stop:
		if err != nil {
			resp, err = &ReceiveEventsResponse{}, nil
		}
	default:
	}
	return respond(resp, err, func(r *ReceiveEventsResponse) *driverv1.ReceiveEventsResponse {
		return &driverv1.ReceiveEventsResponse{Events: eventsToWire(r.Events)}
	})
}

func eventsToWire(in []VMEvent) []*driverv1.VMEvent {
	out := make([]*driverv1.VMEvent, len(in))
	for i, e := range in {
		out[i] = &driverv1.VMEvent{
			Id: text(e.ID), ProviderId: text(e.ProviderID), MachineUid: text(e.MachineUID), Kind: text(string(e.Kind)),
			TimeUnixMillis: unixMillis(e.Time), DeadlineUnixMillis: unixMillis(e.Deadline), Message: text(e.Message),
		}
	}
	return out
}

func eventsFromWire(in []*driverv1.VMEvent) []VMEvent {
	if len(in) == 0 {
		return nil
	}
	out := make([]VMEvent, len(in))
	for i, e := range in {
		out[i] = VMEvent{
			ID: e.GetId(), ProviderID: e.GetProviderId(), MachineUID: e.GetMachineUid(), Kind: VMEventKind(e.GetKind()),
			Time: fromUnixMillis(e.GetTimeUnixMillis()), Deadline: fromUnixMillis(e.GetDeadlineUnixMillis()), Message: e.GetMessage(),
		}
	}
	return out
}

// unixMillis is 0 for the zero time, which the wire uses for "unknown".
func unixMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromUnixMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
