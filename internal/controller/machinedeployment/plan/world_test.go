package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// world is a simulated control cluster for the planner's golden tests: a
// deployment, its MachineSets, their MachineSet controllers (which create
// and delete Machines to match spec.replicas, Machines that are not
// available first) and Machines that become available and finish deleting
// after seeded random delays. Time moves in steps; minReadySeconds is 0.
type world struct {
	md       *v1alpha1.MachineDeployment
	template string
	broken   map[string]bool
	sets     []*simSet
	machines []*simMachine
	rng      *rand.Rand
	step     int
	nextID   int

	log        strings.Builder
	violations []string
	// maxFleet and maxLive are the most Machine objects and the most
	// Machines not being deleted seen at once; floorReached says the
	// availability floor was reached since replicas last changed.
	maxFleet, maxLive int
	floorReached      bool
	// held: the last reconcile held a step below the batch; this one
	// writes it (the controller's coalescing delay is one step here).
	held bool
	// setWrites counts the MachineSet writes of the rollout.
	setWrites int
	// zones, when set, is the deployment's placement: the sets place and
	// remove Machines through internal/spread (world_zones_test.go).
	zones []v1alpha1.PlacementZone
}

type simSet struct {
	name       string
	revision   int64
	spec       int32
	desired    int32
	maxReplica int32
	annotated  bool
	superseded int // step an OnDelete set was superseded; -1 not yet
}

type simMachine struct {
	id       int
	set      string
	created  int
	readyIn  int // steps until available; -1 never (a broken template)
	ready    bool
	deleting bool
	goneIn   int
	zone     string
}

func newWorld(md *v1alpha1.MachineDeployment, template string, seed uint64, zones []v1alpha1.PlacementZone) *world {
	w := &world{md: md, template: template, broken: map[string]bool{}, rng: rand.New(rand.NewPCG(seed, 1)), zones: zones}
	surge, _, _ := machinefacts.Fenceposts(md)
	s := &simSet{name: template, revision: 1, spec: md.Spec.Replicas, desired: md.Spec.Replicas,
		maxReplica: md.Spec.Replicas + surge, annotated: true, superseded: -1}
	w.sets = append(w.sets, s)
	placed := w.place(s.name, int(md.Spec.Replicas))
	for i := range md.Spec.Replicas {
		w.machines = append(w.machines, &simMachine{id: w.id(), set: s.name, ready: true, zone: placed[i]})
	}
	w.floorReached = true
	return w
}

func (w *world) id() int { w.nextID++; return w.nextID }

func (w *world) logf(format string, args ...any) { fmt.Fprintf(&w.log, format, args...) }

func (w *world) set(name string) *simSet {
	for _, s := range w.sets {
		if s.name == name {
			return s
		}
	}
	return nil
}

// input is what the controller would hand the planner.
func (w *world) input() Input {
	surge, unavailable, _ := machinefacts.Fenceposts(w.md)
	in := Input{
		Strategy: w.md.Spec.Strategy.Type, Policy: Policy(w.md), Replicas: w.md.Spec.Replicas,
		MaxSurge: surge, MaxUnavailable: unavailable, Paused: w.md.Spec.Paused,
		Frozen: w.md.Labels[v1alpha1.FrozenLabel] != "",
		Batch:  BatchOf(surge, unavailable), HoldExpired: w.held,
	}
	for _, s := range w.sets {
		v := Set{Name: s.name, Revision: s.revision, Spec: s.spec, Desired: s.desired, HasDesired: s.annotated, MaxReplicas: s.maxReplica}
		for _, m := range w.machines {
			if m.set != s.name {
				continue
			}
			v.Machines++
			switch {
			case m.deleting:
				v.Terminating++
			default:
				v.Reported++
				if m.ready {
					v.Available++
				}
				if s.superseded < 0 || m.created <= s.superseded {
					v.Left++
				}
			}
		}
		in.StatusReplicas += v.Reported
		if s.name == w.template {
			in.New = &v
		} else {
			in.Old = append(in.Old, v)
		}
	}
	return in
}

// reconcile runs the planner once and applies its writes, as the
// controller does; it reports whether anything was written.
func (w *world) reconcile() bool {
	if w.md.Spec.Strategy.Type == v1alpha1.OnDeleteStrategy && !w.md.Spec.Paused {
		for _, s := range w.sets {
			if s.name != w.template && s.superseded < 0 {
				s.superseded = w.step
			}
		}
	}
	in := w.input()
	p := Plan(in)
	w.held = p.Held
	writes := p.Writes()
	if p.Held {
		w.logf("step %3d %-8s held:", w.step, p.Mode)
		for _, t := range p.Targets {
			if strings.Contains(t.Why, "; held at") {
				w.logf(" %s %s |", t.Name, t.Why)
			}
		}
		w.logf("\n")
	}
	if len(writes) == 0 {
		return false
	}
	avail, _ := w.available()
	w.logf("step %3d %-8s fleet %d, available %d |", w.step, p.Mode, w.fleet(), avail)
	for _, t := range p.Targets {
		name, had := t.Name, ""
		if t.Create {
			name = w.template
		} else {
			c := in.set(t.Name)
			had = fmt.Sprintf(" [m%d d%d a%d]", c.Machines, c.Terminating, c.Available)
		}
		from := fmt.Sprint(t.From)
		if t.Create {
			from = "new"
		}
		w.logf(" %s %s→%d%s %s |", name, from, t.To, had, t.Why)
	}
	w.logf("\n")
	w.setWrites += len(writes)
	for _, t := range writes {
		s := w.set(t.Name)
		if t.Create {
			s = &simSet{name: w.template, revision: w.maxRevision() + 1, superseded: -1}
			w.sets = append(w.sets, s)
		}
		s.spec, s.desired, s.maxReplica, s.annotated = t.To, in.Replicas, in.Replicas+in.MaxSurge, true
	}
	return true
}

func (w *world) maxRevision() int64 {
	var r int64
	for _, s := range w.sets {
		r = max(r, s.revision)
	}
	return r
}

// controllers are the MachineSet controllers: each set creates or deletes
// Machines to match its spec.replicas. It reports what it did.
func (w *world) controllers() []string {
	var did []string
	for _, s := range w.sets {
		var live []*simMachine
		for _, m := range w.machines {
			if m.set == s.name && !m.deleting {
				live = append(live, m)
			}
		}
		switch diff := int(s.spec) - len(live); {
		case diff > 0:
			placed := w.place(s.name, diff)
			for i := range diff {
				readyIn := 1 + w.rng.IntN(4)
				if w.broken[s.name] {
					readyIn = -1
				}
				w.machines = append(w.machines, &simMachine{id: w.id(), set: s.name, created: w.step, readyIn: readyIn, zone: placed[i]})
			}
			did = append(did, fmt.Sprintf("%s +%d", s.name, diff))
		case diff < 0:
			// Machines that are not available first, then at random.
			w.rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
			slices.SortStableFunc(live, func(a, b *simMachine) int {
				switch {
				case a.ready == b.ready:
					return 0
				case !a.ready:
					return -1
				}
				return 1
			})
			for _, m := range w.victims(s.name, live, -diff) {
				m.deleting, m.goneIn = true, 1+w.rng.IntN(4)
			}
			did = append(did, fmt.Sprintf("%s −%d", s.name, -diff))
		}
	}
	return did
}

// progress moves Machines on: some become available, some deletions end.
func (w *world) progress() []string {
	var ready, gone int
	kept := w.machines[:0]
	for _, m := range w.machines {
		switch {
		case m.deleting:
			if m.goneIn--; m.goneIn <= 0 {
				gone++
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
		did = append(did, fmt.Sprintf("%d available", ready))
	}
	if gone > 0 {
		did = append(did, fmt.Sprintf("%d gone", gone))
	}
	return did
}

func (w *world) fleet() int { return len(w.machines) }

func (w *world) live() int {
	n := 0
	for _, m := range w.machines {
		if !m.deleting {
			n++
		}
	}
	return n
}

// available counts available Machines, and those of the current template.
func (w *world) available() (all, updated int) {
	for _, m := range w.machines {
		if !m.deleting && m.ready {
			all++
			if m.set == w.template {
				updated++
			}
		}
	}
	return all, updated
}

// check verifies the bounds in the state the world is in; before is the
// fleet count before the phase that led here (so a fleet above its bound
// after a scale-in may shrink, never grow).
func (w *world) check(phase string, beforeFleet, beforeLive int) {
	surge, unavailable, _ := machinefacts.Fenceposts(w.md)
	replicas := int(w.md.Spec.Replicas)
	bound := replicas + int(surge)
	fleet, live := w.fleet(), w.live()
	w.maxFleet, w.maxLive = max(w.maxFleet, fleet), max(w.maxLive, live)
	fail := func(format string, args ...any) {
		w.violations = append(w.violations, fmt.Sprintf("step %d %s: ", w.step, phase)+fmt.Sprintf(format, args...))
	}
	switch {
	case w.md.Spec.Strategy.Type == v1alpha1.OnDeleteStrategy:
		// Only a person deletes: a Machine being deleted is replaced at once.
		if live > max(replicas, beforeLive) {
			fail("%d Machines not being deleted, above replicas %d", live, replicas)
		}
	case Policy(w.md) == v1alpha1.TerminationStarted:
		if live > max(bound, beforeLive) {
			fail("%d Machines not being deleted, above replicas + maxSurge = %d", live, bound)
		}
	default:
		if fleet > max(bound, beforeFleet) {
			fail("%d Machines, above replicas + maxSurge = %d", fleet, bound)
		}
	}
	if w.md.Spec.Strategy.Type == v1alpha1.RecreateStrategy {
		templates := map[string]bool{}
		for _, m := range w.machines {
			templates[m.set] = true
		}
		if len(templates) > 1 {
			fail("Machines of %d templates at once", len(templates))
		}
	}
	if skew := w.skew(); skew > 1 {
		fail("zones %s: skew %d, above 1", w.zoneCounts(""), skew)
	}
	if machinefacts.IsRolling(w.md.Spec.Strategy.Type) {
		floor := replicas - int(unavailable)
		avail, _ := w.available()
		switch {
		case avail >= floor:
			w.floorReached = true
		case w.floorReached:
			fail("%d Machines available, below replicas − maxUnavailable = %d", avail, floor)
		}
	}
}
