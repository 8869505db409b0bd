// Package spread is the rule that spreads a MachineDeployment's Machines
// over its failure domains (docs/failure-domains.md): each zone's share of
// the Machines, where a new Machine goes, which zone loses a Machine
// first, and how far the zones are from their shares. It is pure: the
// MachineSet controller, the MachineDeployment controller and the rollout
// simulation call the same functions.
package spread

import (
	"sort"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Targets is each zone's share of total Machines. Zones out of capacity
// get 0 and their share goes to the others; the shares follow the weights
// (Even gives every zone weight 1), and what division leaves over goes to
// the largest remainders, ties by zone order. A zone of weight 0 gets
// Machines only when every other zone is out of capacity; when every zone
// is, the shares are as if none were (there is nowhere better to go).
func Targets(zones []v1alpha1.PlacementZone, total int32) map[string]int32 {
	out := make(map[string]int32, len(zones))
	w := weights(zones)
	var sum int64
	for i, z := range zones {
		out[z.Name] = 0
		sum += w[i]
	}
	if sum == 0 || total <= 0 {
		return out
	}
	rem := make([]int64, len(zones))
	left := int64(total)
	for i, z := range zones {
		share := int64(total) * w[i] / sum
		out[z.Name] = int32(share)
		rem[i] = int64(total)*w[i] - share*sum
		left -= share
	}
	order := make([]int, len(zones))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for _, i := range order[:left] {
		out[zones[i].Name]++
	}
	return out
}

// Usable reports, per zone, whether Machines may be placed there: the
// zones with a share (see Targets).
func Usable(zones []v1alpha1.PlacementZone) []bool {
	w := weights(zones)
	out := make([]bool, len(zones))
	for i := range w {
		out[i] = w[i] > 0
	}
	return out
}

// weights are the zones' effective weights: their own in the zones with
// capacity; if those all weigh 0, 1 each; if every zone is out of
// capacity, every zone's own (1 each if all weigh 0).
func weights(zones []v1alpha1.PlacementZone) []int64 {
	w := make([]int64, len(zones))
	for _, onlyWithCapacity := range []bool{true, false} {
		for _, own := range []bool{true, false} {
			found := false
			for i, z := range zones {
				w[i] = 0
				switch {
				case onlyWithCapacity && z.OutOfCapacity:
				case own:
					w[i] = int64(z.Weight)
				default:
					w[i] = 1
				}
				found = found || w[i] > 0
			}
			if found {
				return w
			}
		}
	}
	return w
}

// Skew is how far the zone furthest from its target is from it, in
// Machines, over the zones of targets and of counts (a zone counted but
// not listed has target 0). The spread is kept within 1.
func Skew(counts, targets map[string]int32) int32 {
	var worst int32
	seen := func(z string) {
		d := counts[z] - targets[z]
		worst = max(worst, d, -d)
	}
	for z := range targets {
		seen(z)
	}
	for z := range counts {
		seen(z)
	}
	return worst
}

// Balanced reports whether every zone is strictly within one Machine of
// its exact share of the counted Machines (under Even: the most and the
// least crowded zones differ by at most one), and no Machine is in a zone
// without a share. It is stricter than Skew ≤ 1, whose targets are
// rounded.
func Balanced(zones []v1alpha1.PlacementZone, counts map[string]int32) bool {
	sh, total := newShare(zones), sum(counts)
	for z, c := range counts {
		if a := sh.above(z, c, total); a >= sh.sum || -a >= sh.sum || (c > 0 && sh.weight[z] == 0) {
			return false
		}
	}
	for _, z := range zones {
		if _, ok := counts[z.Name]; !ok && int64(total)*sh.weight[z.Name] >= sh.sum {
			return false
		}
	}
	return true
}
