package plan

import (
	"fmt"
	"strings"

	"github.com/millwright-dev/millwright/internal/spread"
)

// The world's failure domains: each simulated MachineSet controller places
// and removes Machines through internal/spread, as the real one does
// (internal/controller/machineset/zones.go), counting every live Machine
// of the deployment.

// zoneCounts counts the live Machines per zone, of one set ("" all), and
// those of the other sets.
func (w *world) zoneCountsOf(set string) (mine, others map[string]int32, live int32) {
	mine, others = map[string]int32{}, map[string]int32{}
	for _, m := range w.machines {
		if m.deleting {
			continue
		}
		live++
		if set == "" || m.set == set {
			mine[m.zone]++
		} else {
			others[m.zone]++
		}
	}
	return mine, others, live
}

// place picks the zones of n new Machines of set (nil without zones).
func (w *world) place(set string, n int) []string {
	if w.zones == nil {
		return make([]string, n)
	}
	counts, _, _ := w.zoneCountsOf("")
	own, others, _ := w.zoneCountsOf(set)
	var fill spread.Fill
	if set == w.newest() {
		fill = spread.Fill{Own: own, Final: w.md.Spec.Replicas}
	}
	return spread.PickZones(w.zones, n, counts, others, fill)
}

// victims picks n of live, set's Machines (ordered: not available first,
// then at random) to delete: without zones the first n; with zones, among
// equals (as available), from the zone most above its share first, ties
// where the newest set (if not this one) has the fewest.
func (w *world) victims(set string, live []*simMachine, n int) []*simMachine {
	if w.zones == nil {
		return live[:n]
	}
	counts, _, _ := w.zoneCountsOf("")
	var staying map[string]int32
	if newest := w.newest(); newest != set {
		staying, _, _ = w.zoneCountsOf(newest)
	}
	zoneOf, class := make([]string, len(live)), make([]int, len(live))
	for i, m := range live {
		zoneOf[i] = m.zone
		if m.ready {
			class[i] = 1
		}
	}
	var out []*simMachine
	for _, i := range spread.Victims(w.zones, n, zoneOf, class, counts, staying) {
		out = append(out, live[i])
	}
	return out
}

// balanced reports whether the live Machines are strictly within one of
// their zones' exact shares (true without zones).
func (w *world) balanced() bool {
	counts, _, _ := w.zoneCountsOf("")
	return w.zones == nil || spread.Balanced(w.zones, counts)
}

// newest is the set of the highest revision.
func (w *world) newest() string {
	best := w.sets[0]
	for _, s := range w.sets {
		if s.revision > best.revision {
			best = s
		}
	}
	return best.name
}

// skew is how far the live Machines are from their zones' shares (0
// without zones).
func (w *world) skew() int32 {
	if w.zones == nil {
		return 0
	}
	counts, _, live := w.zoneCountsOf("")
	return spread.Skew(counts, spread.Targets(w.zones, live))
}

// zoneCounts renders the live Machines per zone, of one set ("" all):
// "a4 b3 c3".
func (w *world) zoneCounts(set string) string {
	mine, _, _ := w.zoneCountsOf(set)
	var parts []string
	for _, z := range w.zones {
		parts = append(parts, fmt.Sprintf("%s%d", z.Name, mine[z.Name]))
	}
	return strings.Join(parts, " ")
}

// zoneColumns is the log's zone columns: live Machines per zone, those of
// the current template, and the skew ("" without zones).
func (w *world) zoneColumns() string {
	if w.zones == nil {
		return ""
	}
	return fmt.Sprintf(" | zones %s, %s %s, skew %d", w.zoneCounts(""), w.template, w.zoneCounts(w.template), w.skew())
}
