package plan

import (
	"path/filepath"
	"testing"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// threeZones is an Even placement over three zones.
var threeZones = []v1alpha1.PlacementZone{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}

// spreadScenarios are rollouts and scaling of a deployment spread over
// three zones (docs/failure-domains.md): the world's check fails a step
// whose live Machines are more than one from a zone's share.
var spreadScenarios = []scenario{
	{name: "spread-10-surge1-unavailable0", replicas: 10, surge: "1", unavailable: "0", zones: threeZones,
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "spread-10-surge3-unavailable1", replicas: 10, surge: "3", unavailable: "1", zones: threeZones,
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "spread-10-surge3-unavailable1-three-revisions", replicas: 10, surge: "3", unavailable: "1", zones: threeZones,
		events: []event{at(0, template("v2")), at(3, template("v3"))}, converges: true},
	{name: "spread-scale-10-4-10", replicas: 10, surge: "1", unavailable: "0", zones: threeZones,
		events: []event{at(0, replicas(4)), at(8, replicas(10))}, converges: true},
	{name: "spread-scale-during-rollout", replicas: 10, surge: "2", unavailable: "1", zones: threeZones,
		events: []event{at(0, template("v2")), at(3, replicas(4)), at(9, replicas(10))}, converges: true},
}

// TestSpreadSimulations replays the spread scenarios like
// TestRolloutSimulations: the bounds, the skew after every step, the end
// state and testdata/<name>.golden, whose world lines carry the zones.
func TestSpreadSimulations(t *testing.T) {
	for _, sc := range spreadScenarios {
		t.Run(sc.name, func(t *testing.T) {
			w := simulate(sc, 1)
			for _, v := range w.violations {
				t.Error(v)
			}
			if problem := converged(w); sc.converges && problem != "" {
				t.Errorf("not converged: %s", problem)
			}
			if !w.balanced() {
				t.Errorf("ends at zones %s: not balanced", w.zoneCounts(""))
			}
			compareGolden(t, filepath.Join("testdata", sc.name+".golden"), w.log.String())
		})
	}
}

// TestSpreadSimulationsManySeeds runs the spread scenarios under other
// random orders of availability and deletion, for the bounds and the skew.
func TestSpreadSimulationsManySeeds(t *testing.T) {
	for _, sc := range spreadScenarios {
		for seed := uint64(2); seed < 60; seed++ {
			w := simulate(sc, seed)
			for _, v := range w.violations {
				t.Errorf("%s seed %d: %s", sc.name, seed, v)
			}
			if problem := converged(w); sc.converges && problem != "" {
				t.Errorf("%s seed %d: not converged: %s", sc.name, seed, problem)
			}
		}
	}
}
