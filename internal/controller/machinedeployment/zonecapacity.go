package machinedeployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/spread"
)

// Event reasons of the spread (docs/failure-domains.md).
const (
	reasonZoneOutOfCapacity    = v1alpha1.ZoneOutOfCapacityReason
	reasonZoneCapacityRestored = "ZoneCapacityRestored"
	reasonZonesInvalid         = v1alpha1.ZonesInvalidReason
)

// Probe backoff of a zone out of capacity: the first probe 30 s after the
// refusal, doubling with every refused probe, at most 10 min apart.
const (
	probeBackoffFirst = 30 * time.Second
	probeBackoffMax   = 10 * time.Minute
)

// probeBackoff is how long after a refusal the zone is probed again,
// given how many probes were refused in a row before it.
func probeBackoff(failedProbes int32) time.Duration {
	d := probeBackoffFirst
	for i := int32(0); i < failedProbes && d < probeBackoffMax; i++ {
		d *= 2
	}
	return min(d, probeBackoffMax)
}

// zoneEvidence is what the deployment's live Machines in one zone say of
// its capacity.
type zoneEvidence struct {
	machines int32
	// refused is the latest create refused for capacity (a Machine without
	// a VM whose last operation is Create Failed ResourceExhausted), and
	// refusedBy that Machine; zero when none.
	refused   time.Time
	refusedBy string
	// created is when the newest VM of the zone's Machines was created
	// (vmCreated), and createdBy its Machine.
	created   time.Time
	createdBy string
}

// zoneEvidenceChanged reports a placed Machine whose create was just
// refused for capacity, or, refused before, just got its VM. A Machine
// that gets its VM at the first try (a probe that succeeds) wakes the
// deployment when its Node turns Ready (machineCounted): waking it for
// every VM created would double a scale-up's reconciles for nothing.
func zoneEvidenceChanged(old, cur *v1alpha1.Machine) bool {
	return cur.Spec.FailureDomain != "" && machinefacts.RefusedForCapacity(old) != machinefacts.RefusedForCapacity(cur)
}

// vmCreated is when m's VM was created: when InfrastructureReady turned
// True, or, without it, when the Machine was (a create retried after the
// zone ran out is a success after it, whenever its Machine was made).
func vmCreated(m *v1alpha1.Machine) time.Time {
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InfrastructureReadyCondition); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return m.CreationTimestamp.Time
}

// zoneEvidenceOf gathers the evidence of every zone from the deployment's
// live Machines, by spec.failureDomain.
func (s *scope) zoneEvidenceOf() map[string]*zoneEvidence {
	out := map[string]*zoneEvidence{}
	for _, ms := range s.sets {
		for _, m := range s.machines[ms.UID] {
			z := m.Spec.FailureDomain
			if z == "" || !m.DeletionTimestamp.IsZero() {
				continue
			}
			ev := out[z]
			if ev == nil {
				ev = &zoneEvidence{}
				out[z] = ev
			}
			ev.machines++
			switch {
			case machinefacts.RefusedForCapacity(m):
				if t := m.Status.LastOperation.LastUpdateTime.Time; !t.Before(ev.refused) {
					ev.refused, ev.refusedBy = t, m.Name
				}
			case m.Spec.ProviderID != "":
				if t := vmCreated(m); !t.Before(ev.created) {
					ev.created, ev.createdBy = t, m.Name
				}
			}
		}
	}
	return out
}

// syncSpread resolves spec.failureDomains, follows each zone's capacity
// and writes status.failureDomains and the Spread condition. A zone is
// out of capacity from the first create refused there for capacity
// (newer than the zone's newest VM) until a VM is created there after
// that; meanwhile the sets place nothing there,
// except from each nextProbe on, when the zone is open again until a
// create there is refused (the next probe twice as late) or succeeds
// (the zone is back). Everything is in the status, so a restarted manager
// goes on where the last one stopped. It comes back at the next probe.
func (r *Reconciler) syncSpread(ctx context.Context, s *scope) (reconcile.Result, error) {
	st := &s.md.Status
	if s.md.Spec.FailureDomains == nil || s.deleting {
		st.FailureDomains = nil
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.SpreadCondition)
		return reconcile.Result{}, nil
	}
	zones, invalid, err := r.resolveZones(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	s.spread = &spreadState{invalid: invalid}
	if invalid != "" {
		st.FailureDomains = nil
		if c := meta.FindStatusCondition(s.readStatus().Conditions, v1alpha1.SpreadCondition); c == nil ||
			c.Reason != reasonZonesInvalid || c.Message != invalid {
			s.spread.event(corev1.EventTypeWarning, reasonZonesInvalid, invalid)
		}
		s.setCondition(v1alpha1.SpreadCondition, metav1.ConditionFalse, reasonZonesInvalid, invalid)
		return reconcile.Result{}, nil
	}

	old := map[string]v1alpha1.FailureDomainStatus{}
	for _, z := range s.readStatus().FailureDomains {
		old[z.Name] = z
	}
	evidence := s.zoneEvidenceOf()
	var res reconcile.Result
	statuses := make([]v1alpha1.FailureDomainStatus, len(zones))
	for i := range zones {
		z := &zones[i]
		ev := evidence[z.Name]
		if ev == nil {
			ev = &zoneEvidence{}
		}
		zs := old[z.Name]
		zs.Name = z.Name
		s.followCapacity(&zs, ev)
		if zs.OutOfCapacitySince != nil && zs.NextProbe != nil && s.now.Before(zs.NextProbe.Time) {
			z.OutOfCapacity = true
			res.RequeueAfter = soonest(res.RequeueAfter, zs.NextProbe.Sub(s.now))
		}
		zs.Machines = ev.machines
		statuses[i] = zs
	}
	targets := spread.Targets(zones, s.md.Spec.Replicas)
	for i := range statuses {
		statuses[i].Target = targets[statuses[i].Name]
	}
	s.spread.zones, s.spread.status = zones, statuses
	st.FailureDomains = statuses
	s.setSpreadCondition(zones)
	return res, nil
}

// followCapacity moves one zone's capacity record along with what its
// Machines show, emitting an Event when the zone goes out of capacity or
// comes back.
func (s *scope) followCapacity(zs *v1alpha1.FailureDomainStatus, ev *zoneEvidence) {
	now := metav1.NewTime(s.now)
	switch {
	case zs.OutOfCapacitySince == nil:
		if ev.refusedBy == "" || ev.refused.Before(ev.created) {
			return
		}
		next := metav1.NewTime(s.now.Add(probeBackoff(0)))
		zs.OutOfCapacitySince, zs.NextProbe, zs.FailedProbes = &now, &next, 0
		s.spread.event(corev1.EventTypeWarning, reasonZoneOutOfCapacity, fmt.Sprintf(
			"zone %s refused to create Machine %s for lack of capacity: new Machines go to the other zones, and Machines waiting for a VM there are replaced in them; next probe at %s",
			zs.Name, ev.refusedBy, next.UTC().Format(time.RFC3339)))
	case ev.createdBy != "" && ev.created.After(zs.OutOfCapacitySince.Time):
		s.spread.event(corev1.EventTypeNormal, reasonZoneCapacityRestored, fmt.Sprintf(
			"zone %s has capacity again: Machine %s got a VM there; it gets its share back (out of capacity since %s, %d probes refused)",
			zs.Name, ev.createdBy, zs.OutOfCapacitySince.UTC().Format(time.RFC3339), zs.FailedProbes))
		zs.OutOfCapacitySince, zs.NextProbe, zs.FailedProbes = nil, nil, 0
	case zs.NextProbe == nil:
		next := metav1.NewTime(s.now.Add(probeBackoff(zs.FailedProbes)))
		zs.NextProbe = &next
	case !s.now.Before(zs.NextProbe.Time) && ev.refusedBy != "" && !ev.refused.Before(zs.NextProbe.Time):
		// The probe — a create placed there since nextProbe — was refused.
		zs.FailedProbes++
		next := metav1.NewTime(s.now.Add(probeBackoff(zs.FailedProbes)))
		zs.NextProbe = &next
	}
}

// event queues an Event of a zone's transition: emitSpreadEvents emits
// it once the status recording the transition is written, so that a
// reconcile whose status write is refused (it read a status behind the
// last written one) does not announce the transition a second time.
func (sp *spreadState) event(eventType, reason, message string) {
	sp.events = append(sp.events, spreadEvent{eventType, reason, message})
}

// spreadEvent is a queued Event.
type spreadEvent struct{ eventType, reason, message string }

// emitSpreadEvents emits the Events queued by syncSpread; the reconciler
// calls it after the status is written.
func (s *scope) emitSpreadEvents() {
	if s.spread == nil {
		return
	}
	for _, e := range s.spread.events {
		s.event(e.eventType, e.reason, e.message)
	}
	s.spread.events = nil
}

// setSpreadCondition says whether the zones are within one Machine of
// their shares, and why not.
func (s *scope) setSpreadCondition(zones []v1alpha1.PlacementZone) {
	statuses := s.spread.status
	full := make([]v1alpha1.PlacementZone, len(zones))
	copy(full, zones)
	for i := range full {
		full[i].OutOfCapacity = false
	}
	shares := spread.Targets(full, s.md.Spec.Replicas)
	var out, off, all []string
	for i, zs := range statuses {
		all = append(all, fmt.Sprintf("%s %d/%d", zs.Name, zs.Machines, zs.Target))
		if zs.OutOfCapacitySince != nil {
			probe := "probing now: the next Machine placed there is the probe"
			if zones[i].OutOfCapacity {
				probe = "next probe at " + zs.NextProbe.UTC().Format(time.RFC3339)
			}
			out = append(out, fmt.Sprintf("zone %s is out of capacity since %s: %d of its share of %d Machines moved to %s; %s (%d probes refused)",
				zs.Name, zs.OutOfCapacitySince.UTC().Format(time.RFC3339), shares[zs.Name]-zs.Target, shares[zs.Name],
				others(zones, i), probe, zs.FailedProbes))
		}
		if d := zs.Machines - zs.Target; d > 1 || d < -1 {
			off = append(off, fmt.Sprintf("zone %s has %d Machines for a share of %d", zs.Name, zs.Machines, zs.Target))
		}
	}
	switch {
	case len(out) > 0:
		s.setCondition(v1alpha1.SpreadCondition, metav1.ConditionFalse, v1alpha1.ZoneOutOfCapacityReason, strings.Join(out, "; "))
	case len(off) > 0:
		s.setCondition(v1alpha1.SpreadCondition, metav1.ConditionFalse, v1alpha1.SpreadRebalancingReason,
			strings.Join(off, "; ")+": Machines are being placed and removed to even them out")
	default:
		s.setCondition(v1alpha1.SpreadCondition, metav1.ConditionTrue, v1alpha1.SpreadBalancedReason,
			"every zone is within one Machine of its share (Machines/share): "+strings.Join(all, ", "))
	}
}

// others names the zones but the i-th.
func others(zones []v1alpha1.PlacementZone, i int) string {
	var names []string
	for j, z := range zones {
		if j != i && !z.OutOfCapacity {
			names = append(names, z.Name)
		}
	}
	if len(names) == 0 {
		return "no other zone (every zone is out of capacity)"
	}
	return strings.Join(names, ", ")
}

// soonest is the shorter of two requeue delays, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
