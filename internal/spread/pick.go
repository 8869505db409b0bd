package spread

import "github.com/millwright-dev/millwright/api/v1alpha1"

// share compares zones against their exact shares: a zone's standing is
// count×W − total×w (W the sum of the effective weights, w the zone's),
// that is W times how far it is above its exact share of total — no
// rounding, so no zone is favoured by where the remainder of a division
// happens to go. A zone not in the placement has weight 0.
type share struct {
	weight map[string]int64
	sum    int64
}

func newShare(zones []v1alpha1.PlacementZone) share {
	s := share{weight: make(map[string]int64, len(zones))}
	for i, w := range weights(zones) {
		s.weight[zones[i].Name] = w
		s.sum += w
	}
	return s
}

// above is W times how far zone z, holding count of total Machines, is
// above its exact share (negative: below).
func (s share) above(z string, count, total int32) int64 {
	return int64(count)*s.sum - int64(total)*s.weight[z]
}

func sum(counts map[string]int32) int32 {
	var t int32
	for _, v := range counts {
		t += v
	}
	return t
}

func clone(counts map[string]int32) map[string]int32 {
	c := make(map[string]int32, len(counts))
	for z, v := range counts {
		c[z] = v
	}
	return c
}

// Fill is what the placing set is to hold once a rollout is done: its own
// live Machines by zone and its final number of Machines (the
// deployment's replicas). A zero Fill bounds nothing.
type Fill struct {
	Own   map[string]int32
	Final int32
}

// PickZones places n new Machines one after the other, each in the usable
// zone (see Usable) furthest below its exact share of the Machines there
// will be (counting those placed before it); ties go to the zone where
// others (Machines a rollout is about to remove: those of the
// deployment's other sets) are most numerous, so a new Machine lands where
// an old one will go, then to zone order. counts are the live Machines per
// zone, others included. When fill is set, a zone is taken only if the
// set's own Machines can still end balanced over fill.Final (see
// completable): a new set filling a zone the old Machines keep crowded
// would be left unbalanced once they go. The caller's maps are not
// changed.
func PickZones(zones []v1alpha1.PlacementZone, n int, counts, others map[string]int32, fill Fill) []string {
	if len(zones) == 0 || n <= 0 {
		return nil
	}
	usable, sh := Usable(zones), newShare(zones)
	c, own := clone(counts), clone(fill.Own)
	out := make([]string, 0, n)
	for range n {
		total := sum(c) + 1
		ok := usable
		if fill.Final > 0 {
			ok = completable(zones, usable, sh, own, fill.Final)
		}
		best := -1
		for i, z := range zones {
			if !ok[i] {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			a, b := sh.above(z.Name, c[z.Name], total), sh.above(zones[best].Name, c[zones[best].Name], total)
			if a < b || (a == b && others[z.Name] > others[zones[best].Name]) {
				best = i
			}
		}
		name := zones[best].Name
		c[name]++
		own[name]++
		out = append(out, name)
	}
	return out
}

// completable says, per zone, whether one more of own there still lets
// own grow to a balanced spread of final Machines: every zone's count
// between the floor and the ceiling of its exact share. That needs the
// zone at most at its ceiling, and the floors of the other zones still
// reachable: Σ max(own, floor) ≤ final. When no zone qualifies (the set
// is unbalanced already, or complete), every usable zone does.
func completable(zones []v1alpha1.PlacementZone, usable []bool, sh share, own map[string]int32, final int32) []bool {
	floor := func(z string) int32 { return int32(int64(final) * sh.weight[z] / sh.sum) }
	ceil := func(z string) int32 {
		if int64(final)*sh.weight[z]%sh.sum != 0 {
			return floor(z) + 1
		}
		return floor(z)
	}
	var need int32
	for _, z := range zones {
		need += max(own[z.Name], floor(z.Name))
	}
	out, any := make([]bool, len(zones)), false
	for i, z := range zones {
		o := own[z.Name] + 1
		after := need - max(own[z.Name], floor(z.Name)) + max(o, floor(z.Name))
		out[i] = usable[i] && sh.sum > 0 && o <= ceil(z.Name) && after <= final
		any = any || out[i]
	}
	if !any {
		return usable
	}
	return out
}

// Victims picks n of the candidates — Machines of one set — to remove,
// one after the other, counting each pick out of its zone before the
// next. Candidates come in the caller's order of deletion, grouped: class
// holds, per candidate, a group number that never decreases along the
// slice (Machines the caller would delete before others, whatever their
// zone, have a lower one). Each pick takes, from the first group with
// candidates left, the one whose zone is furthest above its exact share
// (a zone not in the placement, or out of capacity, has none). Ties go to
// the zone where staying (the Machines of the deployment's newest set,
// when the candidates' set is an older one; nil otherwise) are fewest: an
// old set removes where the new one has not filled the zone yet, so the
// old Machines left at the end are not all in a zone the new set already
// filled. Then to the zone with the most candidates left (a set drains
// its zones evenly), then to the zone later in zone order (the rounded
// shares give the remainder to the earlier ones, see Targets), then to
// the caller's order. zoneOf is each candidate's zone; counts are the
// live Machines of the deployment per zone. It returns the indexes
// picked, in order.
func Victims(zones []v1alpha1.PlacementZone, n int, zoneOf []string, class []int, counts, staying map[string]int32) []int {
	p := picking{share: newShare(zones), counts: clone(counts), staying: staying, mine: map[string]int{}, order: map[string]int{}}
	for i, z := range zones {
		p.order[z.Name] = i
	}
	for _, z := range zoneOf {
		p.mine[z]++
	}
	taken := make([]bool, len(zoneOf))
	var out []int
	for len(out) < min(n, len(zoneOf)) {
		p.total = sum(p.counts) - 1
		best := -1
		for i, z := range zoneOf {
			if taken[i] || (best >= 0 && class[i] != class[best]) {
				continue
			}
			if best < 0 || p.before(z, zoneOf[best]) {
				best = i
			}
		}
		taken[best] = true
		p.counts[zoneOf[best]]--
		p.mine[zoneOf[best]]--
		out = append(out, best)
	}
	return out
}

// picking is the state of Victims' picks.
type picking struct {
	share
	counts, staying map[string]int32
	mine, order     map[string]int
	total           int32 // the Machines left after this pick
}

// before reports whether a Machine of zone a goes before one of zone b
// (see Victims).
func (p *picking) before(a, b string) bool {
	aboveA, aboveB := p.above(a, p.counts[a], p.total), p.above(b, p.counts[b], p.total)
	switch {
	case aboveA != aboveB:
		return aboveA > aboveB
	case p.staying[a] != p.staying[b]:
		return p.staying[a] < p.staying[b]
	case p.mine[a] != p.mine[b]:
		return p.mine[a] > p.mine[b]
	}
	return laterZone(p.order, a, b)
}

// laterZone reports whether zone a comes after zone b in the placement (a
// zone not in it comes after every listed one).
func laterZone(order map[string]int, a, b string) bool {
	oa, aok := order[a]
	ob, bok := order[b]
	if aok && bok {
		return oa > ob
	}
	return !aok && bok
}

// Short is the usable zone furthest below its exact share of the counted
// Machines, when it is a whole Machine or more below ("" when none is):
// where a rebalance moves a Machine to. Moving one there from the zone
// furthest above always brings the zones closer to their shares, so
// rebalancing ends.
func Short(zones []v1alpha1.PlacementZone, counts map[string]int32) string {
	usable, sh, total := Usable(zones), newShare(zones), sum(counts)
	best, worst := "", -sh.sum
	for i, z := range zones {
		if a := sh.above(z.Name, counts[z.Name], total); usable[i] && a <= worst {
			if a < worst || best == "" {
				best = z.Name
			}
			worst = a
		}
	}
	return best
}
