package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// ipWorld is a simulated control cluster for the in-place golden tests: a
// deployment with strategy InPlace, its MachineSets with their moving-out
// and moving-in lists, MachineSet controllers that count as the real one
// does (the Machines a set controls, minus its moving-out list, plus its
// moving-in list), and an executor standing in for the machine
// controller: it takes a Machine annotated with a target through its
// update in a few seeded random steps, then moves it to the target set,
// or fails it, or reports the change refused, as the scenario says.
type ipWorld struct {
	md       *v1alpha1.MachineDeployment
	settings *InPlaceSettings
	template string
	sets     []*ipSimSet
	machines []*ipSimMachine
	// outcome is what the executor does with an update: "name@target" →
	// "fail" or "refuse" (the first attempt only: a retry succeeds).
	outcome map[string]string
	rng     *rand.Rand
	step    int
	nextID  int

	log        strings.Builder
	violations []string
	// maxFleet is the most Machine objects seen at once; created counts
	// the Machines MachineSet controllers created (replacements).
	maxFleet, created int
	// refused are the refused Machines being deleted: each may exist
	// beside its replacement.
	refused map[string]bool
	// interrupt: some reconciles write only the first few of their steps
	// (a crash, a conflict), so the next must finish or undo them.
	interrupt bool
	// scaled: spec.replicas changed during the update; then a scale-in
	// may leave more Machines than replicas until its victims are
	// deleting (never more than before), and a scale-out's new Machines
	// are unavailable until Ready: only the plan itself is held to
	// maxUnavailable (it never raises unavailability above it).
	scaled   bool
	lastLive int
}

type ipSimSet struct {
	name    string
	spec    int32
	desired int32
	out, in []string
}

type ipSimMachine struct {
	name     string
	set      string
	ready    bool
	readyIn  int
	deleting bool
	goneIn   int
	marked   bool
	selected bool
	// target is the InPlaceTargetAnnotation; upTarget, phase and left
	// the executor's status.inPlaceUpdate and the steps it still needs.
	target, upTarget string
	phase            v1alpha1.InPlaceUpdatePhase
	left             int
	attempts         map[string]int
}

func newIPWorld(md *v1alpha1.MachineDeployment, seed uint64, outcome map[string]string) *ipWorld {
	settings, err := InPlaceOf(md)
	if err != nil {
		panic(err)
	}
	w := &ipWorld{md: md, settings: settings, template: "v1", outcome: outcome, refused: map[string]bool{},
		rng: rand.New(rand.NewPCG(seed, 1))}
	w.sets = append(w.sets, &ipSimSet{name: "v1", spec: md.Spec.Replicas, desired: md.Spec.Replicas})
	for range md.Spec.Replicas {
		w.machines = append(w.machines, &ipSimMachine{name: w.newName(), set: "v1", ready: true, attempts: map[string]int{}})
	}
	return w
}

func (w *ipWorld) newName() string { w.nextID++; return fmt.Sprintf("m%02d", w.nextID) }

func (w *ipWorld) logf(format string, args ...any) { fmt.Fprintf(&w.log, format, args...) }

func (w *ipWorld) fail(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf("step %d: ", w.step)+fmt.Sprintf(format, args...))
}

func (w *ipWorld) set(name string) *ipSimSet {
	for _, s := range w.sets {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (w *ipWorld) machine(name string) *ipSimMachine {
	for _, m := range w.machines {
		if m.name == name {
			return m
		}
	}
	return nil
}

// input is what the controller would hand the planner.
func (w *ipWorld) input() Input {
	in := Input{Strategy: v1alpha1.InPlaceStrategy, Replicas: w.md.Spec.Replicas, Paused: w.md.Spec.Paused,
		Frozen: w.md.Labels[v1alpha1.FrozenLabel] != "", InPlace: w.settings}
	for i, s := range w.sets {
		v := Set{Name: s.name, Revision: int64(i + 1), Spec: s.spec, Desired: s.desired, HasDesired: true,
			MovingOut: slices.Clone(s.out), MovingIn: slices.Clone(s.in)}
		for _, m := range w.machines {
			if m.set != s.name {
				continue
			}
			v.Machines++
			if m.deleting {
				v.Terminating++
			} else if m.ready {
				v.Available++
			}
			v.Members = append(v.Members, Machine{Name: m.name, Available: m.ready && !m.deleting, Deleting: m.deleting,
				Marked: m.marked, Selected: m.selected, Target: m.target, UpdateTarget: m.upTarget, Phase: m.phase})
		}
		in.StatusReplicas += v.Machines - v.Terminating
		if s.name == w.template {
			in.New = &v
		} else {
			in.Old = append(in.Old, v)
		}
	}
	return in
}

// counted is what a set's MachineSet controller counts: the Machines it
// controls that are not being deleted and not moving out, and those
// moving in that exist and are not being deleted.
func (w *ipWorld) counted(s *ipSimSet) (own []*ipSimMachine, in int) {
	for _, m := range w.machines {
		if m.set == s.name && !m.deleting && !slices.Contains(s.out, m.name) {
			own = append(own, m)
		}
	}
	for _, name := range s.in {
		if m := w.machine(name); m != nil && !m.deleting && m.set != s.name {
			in++
		}
	}
	return own, in
}

// diffs are spec.replicas − count per set: what each MachineSet
// controller would create (positive) or delete (negative) now.
func (w *ipWorld) diffs() map[string]int {
	out := map[string]int{}
	for _, s := range w.sets {
		own, in := w.counted(s)
		out[s.name] = int(s.spec) - len(own) - in
	}
	return out
}

// reconcile runs the planner once and applies its writes one at a time,
// checking after each that no set would create or delete a Machine
// because of it (a refused Machine's replacement and the new set's fill
// excepted).
func (w *ipWorld) reconcile() bool {
	in := w.input()
	p := Plan(in)
	if p.Mode != ModeInPlace {
		return w.reconcileScale(p)
	}
	var create *Target
	for i := range p.Targets {
		if p.Targets[i].Create {
			create = &p.Targets[i]
		}
	}
	if create != nil {
		w.logf("step %3d %s create %s with %d: %s\n", w.step, p.Mode, w.template, create.To, create.Why)
		w.sets = append(w.sets, &ipSimSet{name: w.template, spec: create.To, desired: w.md.Spec.Replicas})
		return true
	}
	r := p.InPlace
	if len(p.Steps) == 0 {
		return false
	}
	w.logf("step %3d %s: %d unavailable of max %d, %d in transit, %d left, %d failed (max %d)%s\n", w.step, p.Mode,
		w.unavailable(), w.settings.MaxUnavailable, r.InTransit, r.Left, len(r.Failed), w.settings.MaxFailed, stopNote(r))
	steps := p.Steps
	if w.interrupt && len(steps) > 1 && w.rng.IntN(3) == 0 {
		steps = steps[:w.rng.IntN(len(steps))]
		w.logf("         (interrupted after %d of %d writes)\n", len(steps), len(p.Steps))
	}
	for _, st := range steps {
		before := w.diffs()
		if st.Set == "" {
			m := w.machine(st.Machine)
			switch {
			case st.Delete:
				m.marked = true
				w.logf("         mark   %s for deletion (%s)\n", st.Machine, st.Why)
			case st.Clear:
				m.target = ""
				w.logf("         clear  %s target (%s)\n", st.Machine, st.Why)
			default:
				m.target = st.Target
				w.logf("         target %s → %s\n", st.Machine, st.Target)
			}
		} else {
			s := w.set(st.Set)
			w.logf("         write  %s replicas %d→%d out=%v in=%v (%s)\n", s.name, s.spec, st.Replicas, st.MovingOut, st.MovingIn, st.Why)
			s.spec, s.out, s.in, s.desired = st.Replicas, st.MovingOut, st.MovingIn, w.md.Spec.Replicas
		}
		explained := strings.Contains(st.Why, "refused") || strings.Contains(st.Why, "in old sets")
		for name, d := range w.diffs() {
			if d != before[name] && !explained {
				w.fail("writing %q: set %s would now create/delete %d (was %d)", st.Why, name, d, before[name])
			}
		}
	}
	return true
}

func stopNote(r *InPlaceReport) string {
	switch {
	case r.Stopped != "":
		return "; stopped: " + r.Stopped
	case r.AwaitingSelection:
		return "; waiting for a selection"
	}
	return ""
}

// reconcileScale applies a scale-mode plan (paused deployments).
func (w *ipWorld) reconcileScale(p Result) bool {
	wrote := false
	for _, t := range p.Writes() {
		if s := w.set(t.Name); s != nil && s.spec != t.To {
			w.logf("step %3d %s %s %d→%d %s\n", w.step, p.Mode, s.name, s.spec, t.To, t.Why)
			s.spec, s.desired, wrote = t.To, w.md.Spec.Replicas, true
		}
	}
	return wrote
}

// controllers are the MachineSet controllers: each creates or deletes
// Machines until its count matches its spec.replicas. They never pick a
// Machine on a list (the count leaves them out), marked ones first.
func (w *ipWorld) controllers() []string {
	var did []string
	for _, s := range w.sets {
		own, in := w.counted(s)
		switch diff := int(s.spec) - len(own) - in; {
		case diff > 0:
			for range diff {
				w.machines = append(w.machines, &ipSimMachine{name: w.newName(), set: s.name, readyIn: 1 + w.rng.IntN(4), attempts: map[string]int{}})
				w.created++
			}
			did = append(did, fmt.Sprintf("%s +%d", s.name, diff))
		case diff < 0:
			w.rng.Shuffle(len(own), func(i, j int) { own[i], own[j] = own[j], own[i] })
			slices.SortStableFunc(own, func(a, b *ipSimMachine) int {
				switch {
				case a.marked != b.marked && a.marked:
					return -1
				case a.marked != b.marked:
					return 1
				case a.ready != b.ready && !a.ready:
					return -1
				case a.ready != b.ready:
					return 1
				}
				return 0
			})
			var names []string
			for _, m := range own[:min(len(own), -diff)] {
				if m.target != "" && !m.marked {
					w.fail("set %s deletes %s, which is being updated in place", s.name, m.name)
				}
				m.deleting, m.goneIn = true, 1+w.rng.IntN(3)
				names = append(names, m.name)
			}
			did = append(did, fmt.Sprintf("%s −%d (%s)", s.name, len(names), strings.Join(names, ", ")))
		}
	}
	return did
}

// executor stands in for the machine controller: it starts an update for
// a Machine annotated with a target, takes a few steps, then moves the
// Machine (owner = target, annotation removed) or fails or refuses it.
func (w *ipWorld) executor() []string {
	var did []string
	for _, m := range w.machines {
		if m.deleting {
			continue
		}
		switch {
		case m.target == "" && m.phase != "" && m.phase != v1alpha1.InPlaceSucceeded:
			// A person removed the annotation of a failed update: the
			// machine controller uncordons and clears the status.
			m.upTarget, m.phase = "", ""
			did = append(did, m.name+" cleared")
		case m.target != "" && m.upTarget != m.target:
			m.upTarget, m.phase, m.left = m.target, v1alpha1.InPlaceDraining, 1+w.rng.IntN(4)
			m.attempts[m.target]++
			did = append(did, m.name+" draining")
		case m.target != "" && (m.phase == v1alpha1.InPlaceDraining || m.phase == v1alpha1.InPlaceUpdating):
			if m.left--; m.left > 0 {
				m.phase = v1alpha1.InPlaceUpdating
				continue
			}
			switch w.outcome[m.name+"@"+m.target] {
			case "fail":
				if m.attempts[m.target] == 1 {
					m.phase = v1alpha1.InPlaceFailed
					did = append(did, m.name+" failed")
					continue
				}
			case "refuse":
				m.phase = v1alpha1.InPlaceRefused
				w.refused[m.name] = true
				did = append(did, m.name+" refused")
				continue
			}
			before := w.diffs()
			m.phase, m.set, m.target = v1alpha1.InPlaceSucceeded, m.target, ""
			for name, d := range w.diffs() {
				if d != before[name] {
					w.fail("moving %s changes what set %s would create/delete: %d (was %d)", m.name, name, d, before[name])
				}
			}
			did = append(did, m.name+" moved to "+m.set)
		}
	}
	return did
}

// progress moves Machines on: new ones become Ready, deletions end.
func (w *ipWorld) progress() []string {
	var ready, gone int
	kept := w.machines[:0]
	for _, m := range w.machines {
		switch {
		case m.deleting:
			if m.goneIn--; m.goneIn <= 0 {
				gone++
				delete(w.refused, m.name)
				continue
			}
		case !m.ready && m.readyIn > 0:
			if m.readyIn--; m.readyIn == 0 {
				m.ready = true
				ready++
			}
		}
		kept = append(kept, m)
	}
	w.machines = kept
	var did []string
	if ready > 0 {
		did = append(did, fmt.Sprintf("%d Ready", ready))
	}
	if gone > 0 {
		did = append(did, fmt.Sprintf("%d gone", gone))
	}
	return did
}

// unavailable is replicas minus the Machines that serve: Ready, not being
// deleted, without a target (the executor cordons a Machine with one and
// uncordons it when it moves, removing the target). A Machine on a list
// without a target (a start cut short) still serves.
func (w *ipWorld) unavailable() int {
	serving := 0
	for _, m := range w.machines {
		if m.ready && !m.deleting && m.target == "" {
			serving++
		}
	}
	return max(0, int(w.md.Spec.Replicas)-serving)
}

// check verifies the bounds in the state the world is in: at most
// maxUnavailable Machines unavailable, never more Machines than replicas
// apart from refused ones beside their replacements.
func (w *ipWorld) check(phase string) {
	replicas := int(w.md.Spec.Replicas)
	live, fleet := 0, len(w.machines)
	for _, m := range w.machines {
		if !m.deleting {
			live++
		}
	}
	w.maxFleet = max(w.maxFleet, fleet)
	defer func() { w.lastLive = live }()
	if w.scaled {
		if live > max(replicas, w.lastLive) {
			w.fail("%s: %d Machines not being deleted, above replicas %d and above the %d before", phase, live, replicas, w.lastLive)
		}
		return
	}
	if live > replicas {
		w.fail("%s: %d Machines not being deleted, above replicas %d", phase, live, replicas)
	}
	if fleet > replicas+len(w.refused) {
		w.fail("%s: %d Machines, above replicas %d + %d refused being replaced", phase, fleet, replicas, len(w.refused))
	}
	if u := w.unavailable(); u > int(w.settings.MaxUnavailable) {
		w.fail("%s: %d Machines unavailable, above maxUnavailable %d", phase, u, w.settings.MaxUnavailable)
	}
}
