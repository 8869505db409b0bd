package machine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/patch"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// What the manager hears from drivers through ReceiveEvents
// (docs/interruptions.md).
const (
	// eventPoll is how long one ReceiveEvents call may wait for an event.
	eventPoll = 20 * time.Second
	// eventsUnimplementedRetry is how long the manager waits before it asks
	// again a driver that answered Unimplemented: a driver restarted with
	// an interruption queue starts to answer.
	eventsUnimplementedRetry = 5 * time.Minute
	// unmatchedEventKept is how long after its announcement an event whose
	// Machine the cache does not show is left unacknowledged, to come back:
	// the Machine's providerID may still be on its way to the cache. Then
	// it is dropped: a VM without a Machine is the orphan collector's.
	unmatchedEventKept = 2 * time.Minute
)

// receiveEvents asks every driver for what its provider announced about
// VMs until ctx ends, one long poll at a time per driver, and records
// each event on its Machine. It runs on the leader only (a manager
// Runnable).
func (r *Reconciler) receiveEvents(ctx context.Context) error {
	var wg sync.WaitGroup
	for name, d := range r.Drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.receiveFrom(ctx, name, d)
		}()
	}
	wg.Wait()
	return nil
}

// receiveFrom is receiveEvents for one driver. An event is acknowledged
// in the call after the one that answered it, once recorded: a manager
// that dies in between is answered it again.
func (r *Reconciler) receiveFrom(ctx context.Context, provider string, d driver.Driver) {
	log := ctrl.FromContext(ctx).WithName("events").WithValues("driver", provider)
	var ack []string
	var failures int32
	for ctx.Err() == nil {
		resp, err := d.ReceiveEvents(ctx, &driver.ReceiveEventsRequest{Acknowledged: ack, Wait: eventPoll})
		var wait time.Duration
		switch {
		case driver.CodeOf(err) == driver.Unimplemented:
			if failures == 0 {
				log.V(1).Info("the driver announces no events", "askAgainIn", eventsUnimplementedRetry)
			}
			failures, wait = 1, eventsUnimplementedRetry
		case err != nil:
			failures++
			wait = backoff(failures, r.Config.BackoffBase, r.Config.BackoffCap)
			log.Info("receiving events failed; acknowledgements kept for the next call", "error", err.Error(), "retryIn", wait)
		default:
			failures, ack = 0, nil
			for _, ev := range resp.Events {
				if r.recordEvent(ctx, log, provider, ev) {
					ack = append(ack, ev.ID)
				}
			}
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}

// recordEvent records ev on its Machine and reports whether it may be
// acknowledged: recorded, or dropped for good.
func (r *Reconciler) recordEvent(ctx context.Context, log logr.Logger, provider string, ev driver.VMEvent) bool {
	log = log.WithValues("event", ev.ID, "kind", ev.Kind, "providerID", ev.ProviderID)
	m, err := r.machineOf(ctx, ev)
	if err != nil {
		log.Error(err, "finding the Machine of an event")
		return false
	}
	if m == nil {
		if time.Since(ev.Time) < unmatchedEventKept {
			return false // it comes back; the Machine may be in the cache by then
		}
		log.Info("dropping an event no Machine matches", "machineUID", ev.MachineUID, "message", ev.Message)
		providerEvents.WithLabelValues(provider, string(ev.Kind), "unmatched").Inc()
		return true
	}
	if ev.Kind == driver.VMInterruption {
		if err := r.recordInterruption(ctx, provider, m, ev); err != nil {
			log.Error(err, "recording an interruption", "machine", client.ObjectKeyFromObject(m))
			return false
		}
	} else {
		r.eventOn(m, corev1.EventTypeNormal, eventReason(ev.Kind), fmt.Sprintf("driver %s: %s (nothing is replaced for it)", provider, ev.Message))
	}
	providerEvents.WithLabelValues(provider, string(ev.Kind), "recorded").Inc()
	return true
}

// machineOf finds the Machine whose VM ev is about: by providerID, and by
// UID when the driver gave one, so a providerID a new Machine reuses is
// never taken for its predecessor's.
func (r *Reconciler) machineOf(ctx context.Context, ev driver.VMEvent) (*v1alpha1.Machine, error) {
	if ev.ProviderID == "" {
		return nil, nil
	}
	machines, err := ownerindex.MachinesWithProviderID(ctx, r.Client, ev.ProviderID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(machines, func(m v1alpha1.Machine) bool {
		return ev.MachineUID == "" || string(m.UID) == ev.MachineUID
	})
	if i < 0 {
		return nil, nil
	}
	return &machines[i], nil
}

// recordInterruption sets the Interrupted condition and the deadline on
// m, and says so in an Event, once: an event answered again changes
// nothing.
func (r *Reconciler) recordInterruption(ctx context.Context, provider string, m *v1alpha1.Machine, ev driver.VMEvent) error {
	deadline := m.Status.InterruptionDeadline
	if !ev.Deadline.IsZero() && (deadline == nil || ev.Deadline.Before(deadline.Time)) {
		deadline = &metav1.Time{Time: ev.Deadline}
	}
	if meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.InterruptedCondition) && deadline == m.Status.InterruptionDeadline {
		return nil
	}
	w := patch.New(r.Client, m, patch.WithOwnedConditions(v1alpha1.InterruptedCondition), patch.WithReader(r.APIReader))
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: v1alpha1.InterruptedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.InterruptionReason,
		Message: "driver " + provider + ": " + ev.Message, ObservedGeneration: m.Generation,
	})
	m.Status.InterruptionDeadline = deadline
	if err := w.PatchStatus(ctx, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	msg := fmt.Sprintf("driver %s: %s", provider, ev.Message)
	if deadline != nil {
		msg += fmt.Sprintf("; the VM is taken away at %s", deadline.UTC().Format(time.RFC3339))
	}
	r.eventOn(m, corev1.EventTypeWarning, "Interrupted", msg+"; a Machine of a MachineSet is replaced first, then drained and deleted")
	return nil
}

// eventReason is the Event reason for an event kind that changes nothing
// on the Machine.
func eventReason(kind driver.VMEventKind) string {
	if kind == driver.VMRebalanceRecommendation {
		return "RebalanceRecommended"
	}
	return "ProviderEvent"
}

func (r *Reconciler) eventOn(m *v1alpha1.Machine, eventType, reason, message string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(m, nil, eventType, reason, "ReceiveEvents", "%s", message)
	}
}
