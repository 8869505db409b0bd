package driver

import (
	"context"
	"time"
)

// ReceiveEventsRequest asks a driver what its provider announced about its
// VMs: that one will be taken away (a spot interruption, a scheduled
// retirement) or is at risk of it. The manager asks again and again, one
// call at a time per driver (docs/interruptions.md).
type ReceiveEventsRequest struct {
	// Acknowledged lists the IDs of events from earlier answers that the
	// manager has recorded on their Machines: the driver forgets them (for
	// AWS, deletes their SQS messages). An event never acknowledged is
	// answered again later, so a manager that dies between the answer and
	// the record loses nothing.
	Acknowledged []string
	// Wait is how long the driver may wait for an event when it has none
	// (a long poll); 0 answers at once. The call's deadline allows for it.
	Wait time.Duration
}

// ReceiveEventsResponse lists the events the driver has for the manager,
// none while there are none.
type ReceiveEventsResponse struct {
	Events []VMEvent
}

// VMEvent is one thing a provider announced about one VM.
type VMEvent struct {
	// ID names the event for Acknowledged; opaque to the manager.
	ID string
	// ProviderID of the VM, as CreateMachine returned it.
	ProviderID string
	// MachineUID is the UID of the Machine the VM was made for (its tag),
	// when the driver knows it: the manager records the event only on the
	// Machine with that UID, never on another one a reused providerID
	// might name.
	MachineUID string
	// Kind says what is announced.
	Kind VMEventKind
	// Time is when the provider announced it.
	Time time.Time
	// Deadline is when the VM will be taken away; zero when unknown. The
	// manager forces what is left of the Node's drain at the deadline: the
	// pods are gone with the VM then anyway.
	Deadline time.Time
	// Message says it for a person: the provider's own words, such as
	// "EC2 Spot Instance Interruption Warning: instance-action terminate".
	Message string
}

// VMEventKind says what a VMEvent announces.
type VMEventKind string

// The kinds of VMEvent. A manager that does not know a kind (a newer
// driver's) records it as an Event on the Machine and does nothing else.
const (
	// VMInterruption: the provider takes the VM away at Deadline (a spot
	// interruption, a scheduled retirement or maintenance that stops it).
	// The Machine gets the Interrupted condition; its MachineSet creates
	// its replacement first and then deletes it, drained before Deadline.
	VMInterruption VMEventKind = "Interruption"
	// VMRebalanceRecommendation: the VM is at elevated risk of an
	// interruption (EC2's rebalance recommendation). Recorded as an Event
	// on the Machine; nothing is replaced for it.
	VMRebalanceRecommendation VMEventKind = "RebalanceRecommendation"
)

// ReceiveEvents returns Unimplemented.
func (UnimplementedDriver) ReceiveEvents(context.Context, *ReceiveEventsRequest) (*ReceiveEventsResponse, error) {
	return nil, Errorf(Unimplemented, "ReceiveEvents is not implemented")
}
