package spread

import "github.com/millwright-dev/millwright/api/v1alpha1"

// PickZones places n new Machines one after the other, each in the usable
// zone (see Usable) with the largest deficit (target − count, counting
// those placed before it); ties go to the zone where others (Machines that
// a rollout is about to remove: those of the deployment's other sets) are
// most numerous, so a new Machine lands where an old one will go, then to
// zone order. counts are the live Machines per zone, others included.
func PickZones(zones []v1alpha1.PlacementZone, n int, counts, others, targets map[string]int32) []string {
	if len(zones) == 0 || n <= 0 {
		return nil
	}
	usable := Usable(zones)
	c := make(map[string]int32, len(counts))
	for z, v := range counts {
		c[z] = v
	}
	out := make([]string, 0, n)
	for range n {
		best := -1
		for i, z := range zones {
			if usable[i] && (best < 0 || placeBefore(z.Name, zones[best].Name, c, others, targets)) {
				best = i
			}
		}
		name := zones[best].Name
		c[name]++
		out = append(out, name)
	}
	return out
}

// placeBefore reports whether zone a takes the next Machine before zone b
// (which comes earlier in zone order).
func placeBefore(a, b string, counts, others, targets map[string]int32) bool {
	if da, db := targets[a]-counts[a], targets[b]-counts[b]; da != db {
		return da > db
	}
	return others[a] > others[b]
}

// Victims picks n of the candidates to remove, one after the other,
// counting each pick out of its zone before the next. Candidates come in
// the caller's order of deletion, grouped: class holds, per candidate, a
// group number that never decreases along the slice (Machines the caller
// would delete before others, whatever their zone, have a lower one).
// Each pick takes, from the first group with candidates left, the one
// whose zone has the largest excess (count − target; a zone not in
// targets has target 0), ties by the caller's order. zoneOf is each
// candidate's zone; it returns the indexes picked, in order.
func Victims(n int, zoneOf []string, class []int, counts, targets map[string]int32) []int {
	c := make(map[string]int32, len(counts))
	for z, v := range counts {
		c[z] = v
	}
	taken := make([]bool, len(zoneOf))
	var out []int
	for len(out) < min(n, len(zoneOf)) {
		best := -1
		for i := range zoneOf {
			switch {
			case taken[i]:
			case best < 0:
				best = i
			case class[i] != class[best]:
			case c[zoneOf[i]]-targets[zoneOf[i]] > c[zoneOf[best]]-targets[zoneOf[best]]:
				best = i
			}
		}
		taken[best] = true
		c[zoneOf[best]]--
		out = append(out, best)
	}
	return out
}
