package machineset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/spread"
)

// zoneView is what a set with spec.failureDomains places and removes
// Machines by (docs/failure-domains.md): its placement and the live
// Machines per zone of the whole deployment, since the zones are kept
// within one Machine of their shares across every set of a deployment,
// not per set.
type zoneView struct {
	placement []v1alpha1.PlacementZone
	// others counts the live Machines of the deployment's other sets by
	// zone: those a rollout removes, so a new Machine goes where they are.
	others map[string]int32
	// newest counts those of the deployment's newest set when it is not
	// this one (this one is being rolled out): its victims go where the
	// newest set has the fewest (spread.Victims).
	newest map[string]int32
	// mine counts the set's own live Machines (scale's alive) by zone.
	mine map[string]int32
	// final is, for the newest set of a deployment, the deployment's
	// replicas (its desired-replicas annotation): the set places so that
	// its own Machines can still end balanced once the old ones are gone
	// (spread.Fill). 0 bounds nothing.
	final int32
}

// zones reads the deployment-wide picture, nil when the set has no
// placement. The other sets' Machines are counted from the Machine
// events (zoneCounts); a reconciler without that watch (a test calling
// Reconcile alone) reads them from the cache through the owner index.
func (r *Reconciler) zones(ctx context.Context, ms *v1alpha1.MachineSet) (*zoneView, error) {
	fd := ms.Spec.FailureDomains
	if fd == nil || len(fd.Zones) == 0 {
		return nil, nil
	}
	z := &zoneView{placement: fd.Zones, others: map[string]int32{}, mine: map[string]int32{}}
	sets, err := r.siblings(ctx, ms)
	if err != nil {
		return nil, err
	}
	if len(sets) > 0 {
		if d, err := strconv.ParseInt(ms.Annotations[v1alpha1.DesiredReplicasAnnotation], 10, 32); err == nil {
			z.final = int32(d)
		}
	}
	newest := ms
	for _, o := range sets {
		if revision(o) > revision(newest) {
			newest = o
		}
	}
	for _, o := range sets {
		into := []map[string]int32{z.others}
		if o == newest {
			z.newest = map[string]int32{}
			into = append(into, z.newest)
		}
		add := func(zone string, n int32) {
			for _, counts := range into {
				counts[zone] += n
			}
		}
		if r.zoneCounts != nil {
			r.zoneCounts.Read(o.UID, func(zones map[string]int32) {
				for zone, n := range zones {
					add(zone, n)
				}
			})
			continue
		}
		machines, err := ownerindex.Controlled[*v1alpha1.Machine](ctx, r.Views, r.Client, &v1alpha1.MachineList{}, ms.Namespace, o.UID)
		if err != nil {
			return nil, err
		}
		for _, m := range machines {
			if counted(m) {
				add(m.Spec.FailureDomain, 1)
			}
		}
	}
	return z, nil
}

// siblings are the other sets of ms's MachineDeployment (none for a set
// without one: it counts only its own Machines). They are the cache's
// objects: read them only.
func (r *Reconciler) siblings(ctx context.Context, ms *v1alpha1.MachineSet) ([]*v1alpha1.MachineSet, error) {
	md, owner := ms.Labels[v1alpha1.MachineDeploymentNameLabel], metav1.GetControllerOfNoCopy(ms)
	if md == "" || owner == nil {
		return nil, nil
	}
	sets := &v1alpha1.MachineSetList{}
	// Read only: the cache's objects, not copies.
	if err := r.Client.List(ctx, sets, client.InNamespace(ms.Namespace), client.MatchingLabels{v1alpha1.MachineDeploymentNameLabel: md},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []*v1alpha1.MachineSet
	for i := range sets.Items {
		o := &sets.Items[i]
		if ref := metav1.GetControllerOfNoCopy(o); o.UID != ms.UID && ref != nil && ref.UID == owner.UID {
			out = append(out, o)
		}
	}
	return out, nil
}

// counted reports whether another set's Machine counts in its zone: live,
// not kept by preservation, not failed (each is on its way out).
func counted(m *v1alpha1.Machine) bool {
	return m.DeletionTimestamp.IsZero() && !machinefacts.Preserved(m) && m.Status.FailureReason == ""
}

// count records the set's own live Machines.
func (z *zoneView) count(alive []*v1alpha1.Machine) {
	z.mine = map[string]int32{}
	for _, m := range alive {
		z.mine[m.Spec.FailureDomain]++
	}
}

// counts are the deployment's live Machines by zone.
func (z *zoneView) counts() map[string]int32 {
	out := make(map[string]int32, len(z.mine)+len(z.others))
	for k, v := range z.mine {
		out[k] += v
	}
	for k, v := range z.others {
		out[k] += v
	}
	return out
}

// place picks the zones of n new Machines ("" each without a placement).
func (z *zoneView) place(n int) []string {
	if z == nil {
		return make([]string, n)
	}
	var fill spread.Fill
	if z.newest == nil {
		fill = spread.Fill{Own: z.mine, Final: z.final}
	}
	return spread.PickZones(z.placement, n, z.counts(), z.others, fill)
}

// stuck reports whether m waits for a VM in a zone out of capacity that
// it will never get there: no VM was made (no providerID) and the
// provider refused its create for lack of capacity. Deleting it is cheap
// and safe, and its replacement goes to a zone with capacity — if there
// is one; otherwise it stays where it is, and the retries probe.
func (z *zoneView) stuck(m *v1alpha1.Machine) bool {
	return z != nil && z.outOfCapacity(m.Spec.FailureDomain) && z.anyWithCapacity() && machinefacts.RefusedForCapacity(m)
}

func (z *zoneView) outOfCapacity(zone string) bool {
	for _, p := range z.placement {
		if p.Name == zone {
			return p.OutOfCapacity
		}
	}
	return false
}

func (z *zoneView) anyWithCapacity() bool {
	for _, p := range z.placement {
		if !p.OutOfCapacity {
			return true
		}
	}
	return false
}

// moveOut deletes the Machines stuck in a zone out of capacity (see
// zoneView.stuck); scale creates their replacements in zones with
// capacity. They have no VM: nothing is disrupted, so no budget is asked.
func (r *Reconciler) moveOut(ctx context.Context, s *scope, stuck []*v1alpha1.Machine) error {
	if len(stuck) == 0 {
		return nil
	}
	var moved []string
	zones := map[string]bool{}
	defer func() {
		if len(moved) > 0 {
			r.event(s.ms, corev1.EventTypeNormal, reasonMovedFromZone, fmt.Sprintf("replacing %d Machine(s) waiting for a VM in a zone out of capacity (%s) in other zones: %s",
				len(moved), strings.Join(slices.Sorted(maps.Keys(zones)), ", "), brief.List(moved, 5, ", ")))
		}
	}()
	for _, m := range stuck {
		why := "its zone " + m.Spec.FailureDomain + " is out of capacity and its VM was never created: replaced in another zone"
		if err := r.deleteMachine(ctx, s, m, why); err != nil {
			return err
		}
		moved = append(moved, m.Name)
		zones[m.Spec.FailureDomain] = true
	}
	return nil
}

// reasonMovedFromZone is the reason of the Event saying Machines were
// moved out of a zone out of capacity.
const reasonMovedFromZone = "MovedFromZone"
