package plan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the simulated rollouts")

// event is something a person or the safety controller does to the
// deployment at one step of a simulated rollout.
type event struct {
	step int
	what string
	do   func(w *world)
}

func template(name string) event {
	return event{what: "template " + name, do: func(w *world) { w.template = name }}
}

func replicas(n int32) event {
	return event{what: fmt.Sprintf("replicas %d", n), do: func(w *world) { w.md.Spec.Replicas = n; w.floorReached = false }}
}

func paused(p bool) event {
	return event{what: fmt.Sprintf("paused %v", p), do: func(w *world) { w.md.Spec.Paused = p }}
}

func frozen(f bool) event {
	return event{what: fmt.Sprintf("frozen %v", f), do: func(w *world) {
		w.md.Labels = map[string]string{}
		if f {
			w.md.Labels[v1alpha1.FrozenLabel] = "true"
		}
	}}
}

// deleteOld is a person deleting one Machine of an old set (OnDelete).
func deleteOld() event {
	return event{what: "a person deletes an old Machine", do: func(w *world) {
		for _, m := range w.machines {
			if m.set != w.template && !m.deleting {
				m.deleting, m.goneIn = true, 1+w.rng.IntN(4)
				return
			}
		}
	}}
}

func at(step int, e event) event { e.step = step; return e }

// scenario is a starting fleet (replicas Machines of template v1, all
// available), a strategy and what happens to it.
type scenario struct {
	name     string
	replicas int32
	strategy v1alpha1.MachineDeploymentStrategyType
	// surge and unavailable: "" leaves the API default.
	surge, unavailable string
	policy             v1alpha1.ReplacementPolicy
	broken             []string
	events             []event
	// converges: the rollout ends with replicas available Machines of the
	// last template and nothing else.
	converges bool
	// zones spreads the deployment over failure domains (spread_golden_test.go).
	zones []v1alpha1.PlacementZone
}

func (sc scenario) deployment() *v1alpha1.MachineDeployment {
	md := &v1alpha1.MachineDeployment{}
	md.Spec.Replicas = sc.replicas
	md.Spec.Strategy.Type = sc.strategy
	if machinefacts.IsRolling(sc.strategy) {
		ru := &v1alpha1.RollingUpdateMachineDeployment{ReplacementPolicy: sc.policy}
		if sc.surge != "" {
			ru.MaxSurge = ptrIOS(sc.surge)
		}
		if sc.unavailable != "" {
			ru.MaxUnavailable = ptrIOS(sc.unavailable)
		}
		md.Spec.Strategy.RollingUpdate = ru
	}
	return md
}

func ptrIOS(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

var scenarios = []scenario{
	{name: "rolling-3-surge1-unavailable0", replicas: 3, surge: "1", unavailable: "0",
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "rolling-3-surge1-unavailable0-started", replicas: 3, surge: "1", unavailable: "0", policy: v1alpha1.TerminationStarted,
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "rolling-10-surge10pct-unavailable0", replicas: 10, surge: "10%", unavailable: "0",
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "rolling-10-surge0-unavailable3", replicas: 10, surge: "0", unavailable: "3",
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "rolling-100-surge10pct-unavailable0", replicas: 100, surge: "10%", unavailable: "0",
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "rolling-100-surge10pct-unavailable0-started", replicas: 100, surge: "10%", unavailable: "0", policy: v1alpha1.TerminationStarted,
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "rolling-100-surge30pct-unavailable0", replicas: 100, surge: "30%", unavailable: "0",
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "rolling-scale-out-during-rollout", replicas: 10, surge: "2", unavailable: "1",
		events: []event{at(0, template("v2")), at(3, replicas(15))}, converges: true},
	{name: "rolling-scale-in-during-rollout", replicas: 10, surge: "2", unavailable: "1",
		events: []event{at(0, template("v2")), at(3, replicas(5))}, converges: true},
	{name: "rolling-three-revisions", replicas: 10, surge: "3", unavailable: "1",
		events: []event{at(0, template("v2")), at(3, template("v3"))}, converges: true},
	{name: "rolling-three-revisions-started", replicas: 10, surge: "3", unavailable: "1", policy: v1alpha1.TerminationStarted,
		events: []event{at(0, template("v2")), at(3, template("v3"))}, converges: true},
	{name: "rolling-broken-new-template", replicas: 5, surge: "1", unavailable: "0", broken: []string{"v2"},
		events: []event{at(0, template("v2"))}},
	{name: "rolling-broken-new-template-unavailable2", replicas: 5, surge: "1", unavailable: "2", broken: []string{"v2"},
		events: []event{at(0, template("v2"))}},
	{name: "rolling-paused", replicas: 10, surge: "2", unavailable: "0",
		events: []event{at(0, template("v2")), at(2, paused(true)), at(3, replicas(12)), at(8, paused(false))}, converges: true},
	{name: "rolling-paused-before-start", replicas: 4, surge: "1", unavailable: "0",
		events: []event{at(0, paused(true)), at(0, template("v2")), at(2, replicas(6)), at(5, paused(false))}, converges: true},
	{name: "rolling-frozen", replicas: 10, surge: "2", unavailable: "0",
		events: []event{at(0, template("v2")), at(2, frozen(true)), at(8, frozen(false))}, converges: true},
	{name: "recreate", replicas: 5, strategy: v1alpha1.RecreateStrategy,
		events: []event{at(0, template("v2"))}, converges: true},
	{name: "on-delete", replicas: 4, strategy: v1alpha1.OnDeleteStrategy,
		events: []event{at(0, template("v2")), at(2, deleteOld()), at(5, deleteOld()), at(5, deleteOld()), at(9, deleteOld())}, converges: true},
}

// TestRolloutSimulations replays each scenario step by step through the
// planner and a simulated world, checks the bounds in every state, and
// compares the plan's log with testdata/<name>.golden (-update rewrites
// it).
func TestRolloutSimulations(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			w := simulate(sc, 1)
			for _, v := range w.violations {
				t.Error(v)
			}
			if sc.converges {
				if problem := converged(w); problem != "" {
					t.Errorf("not converged: %s", problem)
				}
			}
			compareGolden(t, filepath.Join("testdata", sc.name+".golden"), w.log.String())
		})
	}
}

// TestRolloutSimulationsManySeeds runs every scenario under other random
// orders of availability and deletion, for the bounds only.
func TestRolloutSimulationsManySeeds(t *testing.T) {
	for _, sc := range scenarios {
		for seed := uint64(2); seed < 30; seed++ {
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

const maxSteps = 300

func simulate(sc scenario, seed uint64) *world {
	w := newWorld(sc.deployment(), "v1", seed, sc.zones)
	for _, b := range sc.broken {
		w.broken[b] = true
	}
	surge, unavailable, _ := machinefacts.Fenceposts(w.md)
	w.logf("# %s: %d Machines of v1, %s", sc.name, sc.replicas, strategyName(w.md))
	if machinefacts.IsRolling(sc.strategy) {
		w.logf(" maxSurge %d maxUnavailable %d, %s", surge, unavailable, Policy(w.md))
	}
	w.logf(", seed %d\n# each plan line: set had→gets [Machines, deleting, available] why\n", seed)
	quiet := 0
	for w.step = 0; w.step < maxSteps && quiet < 3; w.step++ {
		lastEvent := 0
		for _, e := range sc.events {
			lastEvent = max(lastEvent, e.step)
			if e.step == w.step {
				e.do(w)
				w.logf("step %3d event: %s\n", w.step, e.what)
			}
		}
		wrote := w.reconcile()
		fleet, live := w.fleet(), w.live()
		did := w.controllers()
		w.check("MachineSet controllers", fleet, live)
		fleet, live = w.fleet(), w.live()
		did = append(did, w.progress()...)
		w.check("Machines", fleet, live)
		if len(did) > 0 {
			w.logf("         world: %s%s\n", strings.Join(did, ", "), w.zoneColumns())
		}
		if !wrote && len(did) == 0 && w.step > lastEvent && !pending(w) {
			quiet++
		} else {
			quiet = 0
		}
	}
	avail, _ := w.available()
	w.logf("end at step %d: %d Machines (at most %d, %d not being deleted), %d available, %d MachineSet writes\n",
		w.step, w.fleet(), w.maxFleet, w.maxLive, avail, w.setWrites)
	return w
}

// pending reports whether a Machine is still on its way somewhere.
func pending(w *world) bool {
	for _, m := range w.machines {
		if m.deleting || (!m.ready && m.readyIn > 0) {
			return true
		}
	}
	return false
}

func strategyName(md *v1alpha1.MachineDeployment) string {
	if machinefacts.IsRolling(md.Spec.Strategy.Type) {
		return string(v1alpha1.RollingUpdateStrategy)
	}
	return string(md.Spec.Strategy.Type)
}

// converged says what is wrong with the end state of a rollout that should
// have completed, "" if nothing.
func converged(w *world) string {
	replicas := int(w.md.Spec.Replicas)
	_, updated := w.available()
	if w.fleet() != replicas || updated != replicas {
		return fmt.Sprintf("%d Machines, %d available of %s; want %d", w.fleet(), updated, w.template, replicas)
	}
	for _, s := range w.sets {
		if want := int32(0); s.name == w.template {
			if s.spec != int32(replicas) {
				return fmt.Sprintf("new set %s at %d", s.name, s.spec)
			}
		} else if s.spec != want {
			return fmt.Sprintf("old set %s at %d", s.name, s.spec)
		}
	}
	return ""
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestRolloutSimulations ./internal/controller/machinedeployment/plan -update writes it)", err)
	}
	if string(want) != got {
		t.Errorf("%s is stale: the planner decides otherwise now; review the difference and rerun with -update.\n%s", path, diff(string(want), got))
	}
}

// diff shows the first lines that differ.
func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var a, b string
		if i < len(wl) {
			a = wl[i]
		}
		if i < len(gl) {
			b = gl[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  golden: %s\n  now:    %s", i+1, a, b)
		}
	}
	return ""
}
