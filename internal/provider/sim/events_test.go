package sim

import (
	"context"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/pkg/driver"
)

func receive(t *testing.T, s *Sim, wait time.Duration, ack ...string) []driver.VMEvent {
	t.Helper()
	resp, err := s.ReceiveEvents(context.Background(), &driver.ReceiveEventsRequest{Acknowledged: ack, Wait: wait})
	if err != nil {
		t.Fatalf("ReceiveEvents: %v", err)
	}
	return resp.Events
}

// TestAnnouncedEventsStayUntilAcknowledged: an announced interruption is
// answered with its VM's providerID, Machine UID and deadline; hidden for
// the visibility time once answered, answered again after it unless
// acknowledged, and never after.
func TestAnnouncedEventsStayUntilAcknowledged(t *testing.T) {
	s, clk := newTestSim(t, Options{})
	m := machine("m", "c")
	m.UID = "uid-m"
	created := mustCreate(t, s, m, class("c", basicSpec))
	vm := s.Cloud().MachineVMs("default", "m")[0]

	if got := receive(t, s, 0); len(got) != 0 {
		t.Fatalf("events before any announcement: %+v", got)
	}
	if _, err := s.Cloud().Announce("vm-nope", driver.VMInterruption, time.Minute); driver.CodeOf(err) != driver.NotFound {
		t.Fatalf("announcing for a VM that does not exist: %v; want NotFound", err)
	}
	if _, err := s.Cloud().Announce(vm.ID, driver.VMInterruption, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	got := receive(t, s, 0)
	if len(got) != 1 {
		t.Fatalf("events: %+v; want the interruption", got)
	}
	ev := got[0]
	if ev.Kind != driver.VMInterruption || ev.ProviderID != created.ProviderID || ev.MachineUID != "uid-m" ||
		!ev.Time.Equal(epoch) || !ev.Deadline.Equal(epoch.Add(2*time.Minute)) || ev.ID == "" {
		t.Fatalf("event %+v; want an Interruption of %s (uid-m) at %s, deadline 2m later", ev, created.ProviderID, epoch)
	}
	if got := receive(t, s, 0); len(got) != 0 {
		t.Fatalf("an answered event came back within its visibility time: %+v", got)
	}
	clk.Step(eventVisibility)
	if got := receive(t, s, 0); len(got) != 1 || got[0].ID != ev.ID {
		t.Fatalf("an unacknowledged event after its visibility time: %+v; want it again", got)
	}
	clk.Step(eventVisibility)
	if got := receive(t, s, 0, ev.ID); len(got) != 0 {
		t.Fatalf("an acknowledged event came back: %+v", got)
	}
}

// TestReceiveEventsWaitsForAnAnnouncement: a long poll returns the event
// announced while it waits, not at the end of its wait.
func TestReceiveEventsWaitsForAnAnnouncement(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mustCreate(t, s, machine("m", "c"), class("c", basicSpec))
	vm := s.Cloud().MachineVMs("default", "m")[0]
	done := make(chan []driver.VMEvent, 1)
	go func() {
		resp, err := s.ReceiveEvents(context.Background(), &driver.ReceiveEventsRequest{Wait: time.Hour})
		if err != nil {
			t.Errorf("ReceiveEvents: %v", err)
		}
		done <- resp.Events
	}()
	if _, err := s.Cloud().Announce(vm.ID, driver.VMRebalanceRecommendation, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if len(got) != 1 || got[0].Kind != driver.VMRebalanceRecommendation || !got[0].Deadline.IsZero() {
			t.Fatalf("events %+v; want the rebalance recommendation without a deadline", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("the long poll did not return the event announced while it waited")
	}
}
