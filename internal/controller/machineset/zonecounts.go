package machineset

import (
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
)

// zoneCounts are, per MachineSet, its Machines that count in their zones
// (counted) by zone, kept from the Machine informer's events
// (changed.SetCounts): a set placing or removing Machines reads its
// siblings' sums instead of every Machine they have. Reading them was
// the set's one read of a whole deployment at each of its events during
// a rollout with zones (docs/benchmarks.md, "Constant work per event").
// A count a moment behind the cache is tolerated as the cache being
// behind the API server is.
type zoneCounts = changed.SetCounts[map[string]int32]

// newZoneCounts keeps the counts; their watch (Handler(nil)) wakes no
// set: the ledger's watch does.
func newZoneCounts() *zoneCounts {
	return changed.NewSetCounts(counted,
		func(zones map[string]int32, m *v1alpha1.Machine) map[string]int32 {
			if zones == nil {
				zones = map[string]int32{}
			}
			zones[m.Spec.FailureDomain]++
			return zones
		},
		func(zones map[string]int32, m *v1alpha1.Machine) (map[string]int32, bool) {
			if zones[m.Spec.FailureDomain]--; zones[m.Spec.FailureDomain] <= 0 {
				delete(zones, m.Spec.FailureDomain)
			}
			return zones, len(zones) == 0
		})
}
