package kubectl

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// event is one Event about an object, from either Events API.
type event struct {
	first, last time.Time
	count       int32
	kind        string // Normal or Warning
	reason      string
	message     string
	source      string
}

// eventsAbout reads the Events regarding the object uid in ns through both
// APIs: events.k8s.io/v1 (what controller-runtime's recorder writes) and
// core/v1 (what older recorders write). Both are views of one store, so
// an Event seen through both is counted once (by its UID). An API the
// user may not read or the server does not serve is skipped; the other
// may still answer.
func eventsAbout(ctx context.Context, c client.Client, ns string, uid types.UID) ([]event, error) {
	seen := map[types.UID]bool{}
	var out []event
	newList := &eventsv1.EventList{}
	errNew := c.List(ctx, newList, client.InNamespace(ns), client.MatchingFields{"regarding.uid": string(uid)})
	if errNew == nil {
		for _, e := range newList.Items {
			seen[e.UID] = true
			ev := event{kind: e.Type, reason: e.Reason, message: e.Note, source: e.ReportingController, count: 1,
				first: e.EventTime.Time}
			if e.DeprecatedFirstTimestamp.Time.After(time.Time{}) && ev.first.IsZero() {
				ev.first = e.DeprecatedFirstTimestamp.Time
			}
			ev.last = ev.first
			if e.Series != nil {
				ev.count, ev.last = e.Series.Count, e.Series.LastObservedTime.Time
			} else if e.DeprecatedCount > 1 {
				ev.count, ev.last = e.DeprecatedCount, e.DeprecatedLastTimestamp.Time
			}
			out = append(out, ev)
		}
	}
	oldList := &corev1.EventList{}
	errOld := c.List(ctx, oldList, client.InNamespace(ns), client.MatchingFields{"involvedObject.uid": string(uid)})
	if errOld == nil {
		for _, e := range oldList.Items {
			if seen[e.UID] {
				continue
			}
			ev := event{kind: e.Type, reason: e.Reason, message: e.Message, source: e.Source.Component, count: max(e.Count, 1),
				first: e.FirstTimestamp.Time, last: e.LastTimestamp.Time}
			if ev.first.IsZero() {
				ev.first = e.EventTime.Time
			}
			if ev.last.IsZero() {
				ev.last = ev.first
			}
			if ev.source == "" {
				ev.source = e.ReportingController
			}
			out = append(out, ev)
		}
	}
	if errNew != nil && errOld != nil {
		if skippable(errOld) {
			return nil, nil
		}
		return nil, errOld
	}
	return out, nil
}

// skippable errors leave a part of the picture out instead of failing the
// command: the user may not read it, or the server does not serve it.
func skippable(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}
