package sim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// eventVisibility is how long an event answered by ReceiveEvents stays
// hidden before it is answered again, when it was not acknowledged: as an
// SQS message's visibility timeout.
const eventVisibility = 10 * time.Second

// pendingEvent is an event the sim announced, kept until acknowledged.
type pendingEvent struct {
	event     driver.VMEvent
	visibleAt time.Time
}

// eventQueue holds announced events. Guarded by Cloud.mu; not snapshotted
// (a restarted sim has announced nothing).
type eventQueue struct {
	pending []pendingEvent
	seq     int
	// arrived is closed and replaced when an event is added, waking long
	// polls.
	arrived chan struct{}
}

// Announce makes the provider announce something about a VM, as EC2's
// interruption queue would: an interruption (notice is how long before
// the VM is taken away; 0 for no deadline) or a rebalance
// recommendation. The sim does not take the VM away itself: a test does,
// with DeleteVM, when it wants the deadline to bite.
func (c *Cloud) Announce(id string, kind driver.VMEventKind, notice time.Duration) (driver.VMEvent, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	vm, ok := c.vms[id]
	if !ok {
		return driver.VMEvent{}, driver.Errorf(driver.NotFound, "no VM %q", id)
	}
	now := c.clock.Now()
	c.events.seq++
	ev := driver.VMEvent{
		ID:         "ev-" + strconv.Itoa(c.events.seq),
		ProviderID: vm.ProviderID,
		MachineUID: vm.MachineUID,
		Kind:       kind,
		Time:       now,
		Message:    fmt.Sprintf("sim: %s of VM %s", kind, vm.ID),
	}
	if notice > 0 {
		ev.Deadline = now.Add(notice)
		ev.Message += fmt.Sprintf(", taken away in %s", notice)
	}
	c.events.pending = append(c.events.pending, pendingEvent{event: ev, visibleAt: now})
	if c.events.arrived != nil {
		close(c.events.arrived)
		c.events.arrived = nil
	}
	return ev, nil
}

// receive forgets the acknowledged events and returns the visible ones,
// hiding them for eventVisibility; with none, it returns a channel closed
// when one arrives and how long until a hidden one shows again (0: none
// hidden).
func (c *Cloud) receive(acknowledged []string) (events []driver.VMEvent, arrived <-chan struct{}, next time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := &c.events
	q.pending = slices.DeleteFunc(q.pending, func(p pendingEvent) bool { return slices.Contains(acknowledged, p.event.ID) })
	now := c.clock.Now()
	for i := range q.pending {
		p := &q.pending[i]
		if wait := p.visibleAt.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		p.visibleAt = now.Add(eventVisibility)
		events = append(events, p.event)
	}
	if len(events) > 0 {
		return events, nil, 0
	}
	if q.arrived == nil {
		q.arrived = make(chan struct{})
	}
	return nil, q.arrived, next
}

// ReceiveEvents answers the events announced through the admin API
// (POST /vms/{id}/announce), waiting up to req.Wait for one.
func (s *Sim) ReceiveEvents(ctx context.Context, req *driver.ReceiveEventsRequest) (*driver.ReceiveEventsResponse, error) {
	deadline := time.NewTimer(req.Wait)
	defer deadline.Stop()
	ack := req.Acknowledged
	for {
		events, arrived, next := s.cloud.receive(ack)
		ack = nil
		if len(events) > 0 {
			return &driver.ReceiveEventsResponse{Events: events}, nil
		}
		var shows <-chan time.Time
		if next > 0 {
			t := time.NewTimer(next)
			defer t.Stop()
			shows = t.C
		}
		select {
		case <-arrived:
		case <-shows:
		case <-deadline.C:
			return &driver.ReceiveEventsResponse{}, nil
		case <-ctx.Done():
			return nil, driver.Errorf(driver.DeadlineExceeded, "waiting for events: %v", ctx.Err())
		}
	}
}
