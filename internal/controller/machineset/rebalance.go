package machineset

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/spread"
)

// rebalanceAnnotation marks a Machine created above spec.replicas to move
// a Machine into a zone below its share (docs/failure-domains.md,
// "Rebalancing"); its value is the zone. Until it is available the set
// keeps it and the Machine it replaces; then the scale-down removes one
// from the zone furthest above its share.
const rebalanceAnnotation = v1alpha1.GroupName + "/rebalance"

// rebalanceHeld is how many Machines above spec.replicas the set keeps for
// now: its rebalance Machines not yet available, at most
// spec.failureDomains.rebalanceSurge. Deleting one of them, or the
// Machine it will replace, before it is available would undo the move or
// leave the zones short.
func rebalanceHeld(ms *v1alpha1.MachineSet, alive []*v1alpha1.Machine, now time.Time) int {
	fd := ms.Spec.FailureDomains
	if fd == nil || fd.RebalanceSurge <= 0 {
		return 0
	}
	minReady := time.Duration(ms.Spec.MinReadySeconds) * time.Second
	held := 0
	for _, m := range alive {
		if _, ok := m.Annotations[rebalanceAnnotation]; ok && onItsWay(m) && !machinefacts.Available(m, minReady, now) {
			held++
		}
	}
	return min(held, int(fd.RebalanceSurge))
}

// onItsWay reports whether a rebalance Machine is still arriving: it
// never ran yet (no phase, Pending, Provisioning, Provisioned: its Node
// may be registered and not yet Ready), or it is Ready and waiting out
// minReadySeconds. One that ran and went NotReady later (Unknown) is not
// a move in progress: holding it would keep the set above spec.replicas
// for as long as it is down.
func onItsWay(m *v1alpha1.Machine) bool {
	switch m.Status.Phase {
	case "", v1alpha1.PhasePending, v1alpha1.PhaseProvisioning, v1alpha1.PhaseProvisioned:
		return true
	}
	return meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition)
}

// rebalanceTo is the zone a rebalance creates one Machine in, "" when
// none: the set may surge (spec.failureDomains.rebalanceSurge), the
// deployment has no other set's Machines (no rollout), nothing is in
// flight (every Machine of the set is available, none is being deleted
// or failed), no zone is out of capacity, and a zone is a whole Machine or
// more below its share (spread.Short). While a zone is out of capacity
// its running Machines stay where they are: they work, and moving them
// out only to move them back when the zone returns would replace them
// twice.
func rebalanceTo(s *scope, z *zoneView) string {
	fd := s.ms.Spec.FailureDomains
	if z == nil || fd.RebalanceSurge <= 0 {
		return ""
	}
	for _, pz := range fd.Zones {
		if pz.OutOfCapacity {
			return ""
		}
	}
	for _, n := range z.others {
		if n > 0 {
			return ""
		}
	}
	minReady := time.Duration(s.ms.Spec.MinReadySeconds) * time.Second
	for _, m := range s.owned {
		if !machinefacts.Available(m, minReady, s.now) && !s.ledger.movingOut[m.Name] {
			return "" // deleting, failed, on its way, or not available yet
		}
	}
	return spread.Short(z.placement, z.counts())
}
