package plan

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// ipEvent is something a person does at one step of a simulated in-place
// update.
type ipEvent struct {
	step int
	what string
	do   func(w *ipWorld)
}

func ipAt(step int, what string, do func(w *ipWorld)) ipEvent {
	return ipEvent{step: step, what: what, do: do}
}

func ipTemplate(name string) func(*ipWorld) { return func(w *ipWorld) { w.template = name } }

// ipSelect labels Machines update-selected (Manual orchestration).
func ipSelect(names ...string) func(*ipWorld) {
	return func(w *ipWorld) {
		for _, n := range names {
			if m := w.machine(n); m != nil {
				m.selected = true
			}
		}
	}
}

// ipSelectAll labels every Machine of old sets update-selected.
func ipSelectAll(w *ipWorld) {
	for _, m := range w.machines {
		m.selected = true
	}
}

// ipRetry removes the target annotation of a failed Machine: a person
// asking for another attempt (docs/in-place-updates.md).
func ipRetry(name string) func(*ipWorld) {
	return func(w *ipWorld) { w.machine(name).target = "" }
}

func ipPaused(p bool) func(*ipWorld) { return func(w *ipWorld) { w.md.Spec.Paused = p } }

// ipReplicas scales the deployment mid-update.
func ipReplicas(n int32) func(*ipWorld) {
	return func(w *ipWorld) { w.md.Spec.Replicas, w.scaled = n, true }
}

// ipScenario is a starting fleet (replicas Machines of v1, all available)
// with strategy InPlace and what happens to it.
type ipScenario struct {
	name           string
	replicas       int32
	manual         bool
	maxUnavailable string
	maxFailed      int32
	// outcome: "machine@target" → "fail" (first attempt) or "refuse".
	outcome map[string]string
	events  []ipEvent
	// converges: the update ends with replicas Machines in the last
	// template's set and nothing on any list; replaced: how many of them
	// are replacements (the others are the original Machines, updated).
	converges bool
	replaced  int
	// stopped: the update ends stopped by its failures (more than
	// maxFailed, or failed Machines holding every maxUnavailable slot).
	stopped bool
}

func (sc ipScenario) deployment() *v1alpha1.MachineDeployment {
	md := &v1alpha1.MachineDeployment{}
	md.Spec.Replicas = sc.replicas
	md.Spec.Strategy.Type = v1alpha1.InPlaceStrategy
	ip := &v1alpha1.InPlaceMachineDeployment{Orchestration: v1alpha1.InPlaceAuto, MaxFailed: ptr.To(sc.maxFailed)}
	if sc.manual {
		ip.Orchestration = v1alpha1.InPlaceManual
	}
	if sc.maxUnavailable != "" {
		ip.MaxUnavailable = ptrIOS(sc.maxUnavailable)
	}
	md.Spec.Strategy.InPlace = ip
	return md
}

var ipScenarios = []ipScenario{
	{name: "inplace-auto-5-unavailable1", replicas: 5,
		events: []ipEvent{ipAt(0, "template v2", ipTemplate("v2"))}, converges: true},
	{name: "inplace-auto-10-unavailable30pct", replicas: 10, maxUnavailable: "30%",
		events: []ipEvent{ipAt(0, "template v2", ipTemplate("v2"))}, converges: true},
	{name: "inplace-manual-canary", replicas: 4, manual: true, maxUnavailable: "2",
		events: []ipEvent{
			ipAt(0, "template v2", ipTemplate("v2")),
			ipAt(3, "a person selects the canary m02", ipSelect("m02")),
			ipAt(15, "a person selects every Machine", ipSelectAll),
		}, converges: true},
	{name: "inplace-failure-stops", replicas: 5, maxUnavailable: "2", maxFailed: 0,
		outcome: map[string]string{"m02@v2": "fail"},
		events: []ipEvent{
			ipAt(0, "template v2", ipTemplate("v2")),
			ipAt(25, "a person fixes the cause and retries m02", ipRetry("m02")),
		}, converges: true},
	{name: "inplace-failure-then-fixed-template", replicas: 4, maxFailed: 0,
		outcome: map[string]string{"m01@v2": "fail"},
		events: []ipEvent{
			ipAt(0, "template v2", ipTemplate("v2")),
			ipAt(12, "a person writes a fixed template v3", ipTemplate("v3")),
		}, converges: true},
	{name: "inplace-failures-exceed-maxfailed", replicas: 6, maxUnavailable: "3", maxFailed: 1,
		outcome: map[string]string{"m01@v2": "fail", "m02@v2": "fail", "m03@v2": "fail"},
		events:  []ipEvent{ipAt(0, "template v2", ipTemplate("v2"))}, stopped: true},
	// maxFailed 1 tolerates the failure, but its Machine, cordoned until
	// retried, takes the one maxUnavailable slot: stopped all the same.
	{name: "inplace-failure-holds-maxunavailable", replicas: 4, maxUnavailable: "1", maxFailed: 1,
		outcome: map[string]string{"m01@v2": "fail"},
		events:  []ipEvent{ipAt(0, "template v2", ipTemplate("v2"))}, stopped: true},
	{name: "inplace-refused-replaced", replicas: 4,
		outcome: map[string]string{"m02@v2": "refuse"},
		events:  []ipEvent{ipAt(0, "template v2", ipTemplate("v2"))}, converges: true, replaced: 1},
	{name: "inplace-rollback", replicas: 5, maxUnavailable: "2",
		events: []ipEvent{
			ipAt(0, "template v2", ipTemplate("v2")),
			ipAt(4, "rollback: template v1 again", ipTemplate("v1")),
		}, converges: true},
	{name: "inplace-template-changed-mid-update", replicas: 6, maxUnavailable: "2",
		events: []ipEvent{
			ipAt(0, "template v2", ipTemplate("v2")),
			ipAt(4, "template v3", ipTemplate("v3")),
		}, converges: true},
	{name: "inplace-scaled-during-update", replicas: 6, maxUnavailable: "2",
		events: []ipEvent{
			ipAt(0, "template v2", ipTemplate("v2")),
			ipAt(3, "replicas 9", ipReplicas(9)),
			ipAt(8, "replicas 4", ipReplicas(4)),
		}, converges: true, replaced: -1},
	{name: "inplace-paused", replicas: 4,
		events: []ipEvent{
			ipAt(0, "template v2", ipTemplate("v2")),
			ipAt(3, "paused", ipPaused(true)),
			ipAt(12, "resumed", ipPaused(false)),
		}, converges: true},
}

// TestInPlaceSimulations replays each in-place scenario step by step
// through the planner, the MachineSet controllers' counting rule and a
// stand-in executor, checks the bounds in every state and after every
// single write, and compares the log with testdata/<name>.golden
// (-update rewrites it).
func TestInPlaceSimulations(t *testing.T) {
	for _, sc := range ipScenarios {
		t.Run(sc.name, func(t *testing.T) {
			w := simulateInPlace(sc, 1)
			for _, v := range w.violations {
				t.Error(v)
			}
			if problem := ipOutcome(sc, w); problem != "" {
				t.Error(problem)
			}
			compareGolden(t, filepath.Join("testdata", sc.name+".golden"), w.log.String())
		})
	}
}

// TestInPlaceSimulationsManySeeds runs every scenario under other random
// update and deletion durations, for the bounds and the outcome.
func TestInPlaceSimulationsManySeeds(t *testing.T) {
	for _, sc := range ipScenarios {
		for seed := uint64(2); seed < 30; seed++ {
			w := simulateInPlace(sc, seed)
			for _, v := range w.violations {
				t.Errorf("%s seed %d: %s", sc.name, seed, v)
			}
			if problem := ipOutcome(sc, w); problem != "" {
				t.Errorf("%s seed %d: %s", sc.name, seed, problem)
			}
		}
	}
}

// TestInPlaceSimulationsInterrupted runs every scenario with reconciles
// that stop after a random number of their writes (a crash, a conflict):
// the next reconcile must finish or undo what was half written, within the
// same bounds and to the same end.
func TestInPlaceSimulationsInterrupted(t *testing.T) {
	for _, sc := range ipScenarios {
		for seed := uint64(1); seed < 30; seed++ {
			w := simulateInPlaceWith(sc, seed, true)
			for _, v := range w.violations {
				t.Errorf("%s seed %d: %s", sc.name, seed, v)
			}
			if problem := ipOutcome(sc, w); problem != "" {
				t.Errorf("%s seed %d: %s\n%s", sc.name, seed, problem, w.log.String())
			}
		}
	}
}

func simulateInPlace(sc ipScenario, seed uint64) *ipWorld {
	return simulateInPlaceWith(sc, seed, false)
}

func simulateInPlaceWith(sc ipScenario, seed uint64, interrupt bool) *ipWorld {
	w := newIPWorld(sc.deployment(), seed, sc.outcome)
	w.interrupt = interrupt
	orch := "Auto"
	if sc.manual {
		orch = "Manual"
	}
	w.logf("# %s: %d Machines of v1, InPlace %s maxUnavailable %d maxFailed %d, seed %d\n",
		sc.name, sc.replicas, orch, w.settings.MaxUnavailable, w.settings.MaxFailed, seed)
	w.logf("# each write: set replicas had→gets, its moving-out and moving-in lists, why\n")
	quiet := 0
	lastEvent := 0
	for _, e := range sc.events {
		lastEvent = max(lastEvent, e.step)
	}
	for w.step = 0; w.step < maxSteps && quiet < 3; w.step++ {
		for _, e := range sc.events {
			if e.step == w.step {
				e.do(w)
				w.logf("step %3d event: %s\n", w.step, e.what)
			}
		}
		before := w.unavailable()
		wrote := w.reconcile()
		if u := w.unavailable(); w.scaled && u > before && u > int(w.settings.MaxUnavailable) {
			w.fail("the plan raised unavailability from %d to %d, above maxUnavailable %d", before, u, w.settings.MaxUnavailable)
		}
		w.check("after the plan")
		did := w.controllers()
		w.check("MachineSet controllers")
		did = append(did, w.executor()...)
		w.check("executor")
		did = append(did, w.progress()...)
		w.check("Machines")
		if len(did) > 0 {
			w.logf("         world: %s\n", strings.Join(did, ", "))
		}
		if !wrote && len(did) == 0 && w.step > lastEvent && !w.pending() {
			quiet++
		} else {
			quiet = 0
		}
	}
	w.logf("end at step %d: %d Machines (at most %d), %d created, sets:", w.step, len(w.machines), w.maxFleet, w.created)
	for _, s := range w.sets {
		own, in := w.counted(s)
		w.logf(" %s=%d/%d", s.name, len(own)+in, s.spec)
	}
	w.logf("\n")
	return w
}

// pending reports whether something is still on its way.
func (w *ipWorld) pending() bool {
	for _, m := range w.machines {
		if m.deleting || (!m.ready && m.readyIn > 0) ||
			(m.target != "" && m.phase != v1alpha1.InPlaceFailed && m.phase != v1alpha1.InPlaceRefused) {
			return true
		}
	}
	return false
}

// ipOutcome says what is wrong with the end state, "" if nothing.
func ipOutcome(sc ipScenario, w *ipWorld) string {
	for _, s := range w.sets {
		if s.name != w.template && sc.converges && (len(s.out) > 0 || len(s.in) > 0) {
			return fmt.Sprintf("set %s still lists out=%v in=%v", s.name, s.out, s.in)
		}
	}
	if sc.stopped {
		p := Plan(w.input())
		if p.InPlace == nil || !p.InPlace.TooManyFailed || p.InPlace.Stopped == "" {
			return "the update was to stop on its failures, and say so"
		}
		if p.InPlace.Left == 0 {
			return "the update stopped with nothing left to update"
		}
		return ""
	}
	if !sc.converges {
		return ""
	}
	replicas := int(w.md.Spec.Replicas)
	var inNew []string
	for _, m := range w.machines {
		if m.set == w.template && m.ready && !m.deleting && m.target == "" {
			inNew = append(inNew, m.name)
		}
	}
	if len(inNew) != replicas || len(w.machines) != replicas {
		return fmt.Sprintf("%d Machines, %d settled in %s; want %d", len(w.machines), len(inNew), w.template, replicas)
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
	if sc.replaced < 0 {
		return "" // scaled: Machines were created and deleted
	}
	if w.created != sc.replaced {
		return fmt.Sprintf("%d Machines created, want %d (in place replaces none but refused ones)", w.created, sc.replaced)
	}
	original := 0
	for _, n := range inNew {
		var id int
		if _, err := fmt.Sscanf(n, "m%d", &id); err == nil && id <= replicas {
			original++
		}
	}
	if original != replicas-sc.replaced {
		return fmt.Sprintf("%d of the original Machines left, want %d", original, replicas-sc.replaced)
	}
	return ""
}
