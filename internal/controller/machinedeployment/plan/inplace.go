package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
)

// ModeInPlace is the mode of a plan of strategy InPlace.
const ModeInPlace = "in-place"

// InPlaceSettings are a deployment's strategy.inPlace, resolved.
type InPlaceSettings struct {
	// Manual: only selected Machines (UpdateSelectedLabel) are started.
	Manual bool
	// MaxUnavailable is resolved against replicas, at least 1.
	MaxUnavailable int32
	// MaxFailed is how many failed updates to the new set are tolerated.
	MaxFailed int32
	// Admitted, when not nil, names the only Machines that may start: those
	// the MachineDisruptionBudgets granted (docs/disruption-budgets.md).
	// The caller plans, asks the budgets for the plan's starts, and plans
	// again with the granted ones: a start refused is then not written at
	// all, neither its set writes nor its target.
	Admitted map[string]bool
}

// Machine is what the in-place planner knows of one Machine.
type Machine struct {
	Name    string
	Created time.Time
	// Available: machinefacts.Available, with the deployment's
	// minReadySeconds.
	Available bool
	Deleting  bool
	// Held: preserved, not one of the replicas. Marked: it has the
	// DeleteMachineAnnotation. Broken: it has a failureReason.
	Held, Marked, Broken bool
	// Selected: UpdateSelectedLabel "true" on it or on its Node (Manual).
	Selected bool
	// Target is its InPlaceTargetAnnotation, "" without.
	Target string
	// UpdateTarget, Phase and Message are its status.inPlaceUpdate.
	UpdateTarget string
	Phase        v1alpha1.InPlaceUpdatePhase
	Message      string
}

// Step is one write of an in-place plan. The steps are written in order,
// and each leaves every MachineSet's count (the Machines it controls,
// minus its moving-out list, plus its moving-in list) equal to its
// spec.replicas, so no MachineSet controller creates or deletes a Machine
// because of one in transit, whenever it looks. The two exceptions are
// wanted: a refused Machine's set deletes it and the target set creates
// its replacement, and the new set grows to replicas when it has fewer.
type Step struct {
	// Set names the MachineSet a set step writes: spec.replicas becomes
	// Replicas and its lists MovingOut and MovingIn. "" for a Machine step.
	Set                 string
	Replicas            int32
	MovingOut, MovingIn []string
	// Machine names the Machine a Machine step writes: Target sets its
	// InPlaceTargetAnnotation, Delete gives it the DeleteMachineAnnotation,
	// Clear removes its InPlaceTargetAnnotation.
	Machine string
	Target  string
	Delete  bool
	Clear   bool
	// Why says, for the rollout log, why.
	Why string
}

// InPlaceReport is what an in-place plan found, for the deployment's
// conditions and Events.
type InPlaceReport struct {
	// Started, Finished, Reverted and Replaced name the Machines whose
	// update this plan starts, closes after their move, undoes after a
	// failure, or replaces after their driver refused it.
	Started, Finished, Reverted, Replaced []string
	// InTransit counts the Machines still being updated.
	InTransit int32
	// Failed are the failed updates to the new set, "name: message".
	Failed []string
	// Left counts the Machines of old sets not yet being updated.
	Left int32
	// Stopped says why no further Machine is started ("" if none is).
	Stopped string
	// TooManyFailed: stopped because more updates to the new set failed
	// than maxFailed.
	TooManyFailed bool
	// AwaitingSelection: Manual, Machines are left, none is selected
	// and none is being updated.
	AwaitingSelection bool
}

// ipSet is a live set as the in-place plan changes it.
type ipSet struct {
	name    string
	spec    int32
	out, in map[string]bool
	whys    []string
}

// ipState is an in-place plan under construction.
type ipState struct {
	in      Input
	sets    []*ipSet // live sets, old ones oldest first, the new one last
	newSet  *ipSet
	steps   []Step
	members map[string]Machine
	owner   map[string]string
	report  InPlaceReport
}

// inPlace plans strategy InPlace (docs/in-place-updates.md): the new set
// is created at replicas − Σ old spec.replicas (0 when the fleet exists);
// once it exists, Machines whose update ended are closed (moved: dropped from the lists;
// failed: the accounting undone, target set first; refused: marked for
// deletion, dropped from the old set's list so it deletes the Machine,
// then from the target's so it creates the replacement); the new set is
// filled to replicas − Σ old spec.replicas; then, unless
// more updates to the new set failed than maxFailed or the deployment is
// frozen, available Machines of old sets (oldest set first; Manual: only
// selected ones) start, while fewer than maxUnavailable Machines are
// unavailable, each in three writes: its set (replicas −1, moving-out +m),
// the new set (replicas +1, moving-in +m), the Machine's target annotation.
func inPlace(in Input) Result {
	st := newIPState(in)
	if in.New == nil {
		// A half-written start leaves the old sets one short: settle
		// the lists first, or the new set would be created one too big.
		if st.close(); len(st.steps) > 0 {
			return st.result()
		}
		var old int32
		targets := make([]Target, 0, len(st.sets)+1)
		for _, s := range st.sets {
			old += s.spec
			targets = append(targets, Target{Name: s.name, From: s.spec, To: s.spec, Why: "in place: Machines move out to the new set"})
		}
		targets = append(targets, in.newTarget(max(0, in.Replicas-old), fmt.Sprintf("replicas − %d in old sets: Machines move in", old)))
		return Result{Mode: ModeInPlace, Targets: targets}
	}
	st.close()
	st.fill()
	st.start()
	return st.result()
}

// result is the plan: its steps, and a target per set summing them up.
func (st *ipState) result() Result {
	r := Result{Mode: ModeInPlace, Steps: compact(st.steps), InPlace: &st.report}
	for _, s := range st.sets {
		from := st.in.set(s.name).Spec
		why := strings.Join(s.whys, "; ")
		if why == "" {
			why = "in place: unchanged"
		}
		r.Targets = append(r.Targets, Target{Name: s.name, From: from, To: s.spec, Why: why})
	}
	return r
}

func newIPState(in Input) *ipState {
	st := &ipState{in: in, members: map[string]Machine{}, owner: map[string]string{}}
	add := func(s Set) {
		for _, m := range s.Members {
			st.members[m.Name], st.owner[m.Name] = m, s.Name
		}
		if s.Deleting {
			return
		}
		v := &ipSet{name: s.Name, spec: s.Spec, out: toSet(s.MovingOut), in: toSet(s.MovingIn)}
		st.sets = append(st.sets, v)
	}
	for _, s := range in.Old {
		add(s)
	}
	if in.New != nil {
		add(*in.New)
		st.newSet = st.sets[len(st.sets)-1]
	}
	return st
}

// fill grows or shrinks the new set to replicas − Σ old spec.replicas
// (never below its moving-in list): a new deployment's first Machines.
// Moves keep the sum; scaling events are the scale mode's. It runs after
// close, which undoes a start cut short (a moving-out entry without its
// moving-in one): in such a half-written state the sum is one short, and
// the new set must not make up for it.
func (st *ipState) fill() {
	var old int32
	for _, s := range st.sets {
		if s != st.newSet {
			old += s.spec
		}
	}
	n := st.newSet
	if to := max(st.in.Replicas-old, int32(len(n.in))); to != n.spec {
		n.spec = to
		st.write(n, fmt.Sprintf("replicas − %d in old sets", old))
	}
}

// close settles every Machine on a moving-in list whose update ended, and
// every moving-out entry without a moving-in one (a start cut short, or a
// revert half done).
func (st *ipState) close() {
	seen := map[string]bool{}
	for _, t := range st.sets {
		for _, name := range sorted(t.in) {
			seen[name] = true
			st.closeOne(t, name)
		}
	}
	for _, s := range st.sets {
		for _, name := range sorted(s.out) {
			if seen[name] {
				continue
			}
			m, ok := st.members[name]
			delete(s.out, name)
			if !ok || m.Deleting || st.owner[name] != s.name {
				st.write(s, name+" left the set")
				continue
			}
			s.spec++
			st.write(s, name+" moves nowhere: counted again")
		}
	}
}

func (st *ipState) closeOne(t *ipSet, name string) {
	m, ok := st.members[name]
	src := st.set(st.owner[name])
	switch {
	case !ok || m.Deleting || st.owner[name] == t.name:
		delete(t.in, name)
		why := name + " moved in"
		if st.owner[name] != t.name {
			why = name + " gone"
		}
		st.write(t, why)
		for _, s := range st.sets {
			if s.out[name] {
				delete(s.out, name)
				st.write(s, why)
			}
		}
		if ok && st.owner[name] == t.name {
			st.report.Finished = append(st.report.Finished, name)
		}
	case m.UpdateTarget == t.name && m.Phase == v1alpha1.InPlaceFailed:
		// Target first: the Machine stays where it is, counted again
		// by its own set only once the target no longer counts it.
		t.spec--
		delete(t.in, name)
		st.write(t, name+" failed: given back")
		if src != nil && src.out[name] {
			src.spec++
			delete(src.out, name)
			st.write(src, name+" failed: stays")
		}
		st.report.Reverted = append(st.report.Reverted, name)
	case m.UpdateTarget == t.name && m.Phase == v1alpha1.InPlaceRefused || m.Marked:
		// Its own set deletes it (replicas stay lowered), then, once
		// the deletion started, the target creates its replacement
		// (replicas stay raised). The mark goes first and alone: the
		// lists drop the Machine only in a later reconcile, once this
		// deployment's cache shows the mark.
		// The MachineSet reads the same cache, so it sees the mark before
		// the shorter list; its Machine and MachineSet watches are
		// separate, and a list change seen first would make it pick
		// another victim.
		if !m.Marked {
			st.steps = append(st.steps, Step{Machine: name, Delete: true, Why: "refused in place: marked for deletion"})
			st.report.InTransit++
			return
		}
		// The target keeps it on its list until it is being deleted
		// (the first case above drops it then): the replacement comes
		// after the deletion started, never beside a live Machine.
		if src != nil && src.out[name] {
			delete(src.out, name)
			st.write(src, name+" refused: deleted")
			st.report.Replaced = append(st.report.Replaced, name)
			st.report.InTransit++
			return
		}
		if src != nil {
			st.report.InTransit++
			return
		}
		delete(t.in, name)
		st.write(t, name+" refused: replaced")
	case src == nil || !src.out[name]:
		// Still counted by its own set: this set must not count it too.
		t.spec--
		delete(t.in, name)
		st.write(t, name+" not moving out of its set: dropped")
	default:
		st.report.InTransit++
		if m.Target != t.name {
			st.steps = append(st.steps, Step{Machine: name, Target: t.name, Why: "update in place to " + t.name})
		}
	}
}

// start starts the updates this reconcile may start.
func (st *ipState) start() {
	ip := st.in.InPlace
	n := st.newSet
	listed := map[string]bool{}
	for _, s := range st.sets {
		for name := range s.out {
			listed[name] = true
		}
		for name := range s.in {
			listed[name] = true
		}
	}
	var settled int32
	for name, m := range st.members {
		if m.Target == n.name && m.UpdateTarget == n.name && m.Phase == v1alpha1.InPlaceFailed {
			msg := name
			if m.Message != "" {
				msg += ": " + m.Message
			}
			st.report.Failed = append(st.report.Failed, msg)
		}
		if m.Available && !m.Deleting && !m.Held && m.Target == "" && !listed[name] {
			settled++
		}
	}
	sort.Strings(st.report.Failed)
	unavailable := max(0, st.in.Replicas-settled)
	st.clearStale(listed)

	var candidates []Machine
	var sources []*ipSet
	for _, s := range st.sets {
		if s == n {
			continue
		}
		members := append([]Machine(nil), st.in.set(s.name).Members...)
		sort.SliceStable(members, func(i, j int) bool {
			if !members[i].Created.Equal(members[j].Created) {
				return members[i].Created.Before(members[j].Created)
			}
			return members[i].Name < members[j].Name
		})
		for _, m := range members {
			if m.Deleting || m.Held || listed[m.Name] {
				continue
			}
			st.report.Left++
			// A failed or refused update's status stays until the
			// machine controller clears it (after a person removed the
			// annotation to retry): only then may it start again.
			settledStatus := m.Phase == "" || m.Phase == v1alpha1.InPlaceSucceeded
			if m.Available && !m.Marked && !m.Broken && m.Target == "" && settledStatus && (!ip.Manual || m.Selected) {
				candidates = append(candidates, m)
				sources = append(sources, s)
			}
		}
	}
	switch {
	case int32(len(st.report.Failed)) > ip.MaxFailed:
		st.report.Stopped = fmt.Sprintf("%d in-place updates to %s failed, more than maxFailed %d: %s",
			len(st.report.Failed), n.name, ip.MaxFailed, brief.List(st.report.Failed, 5, "; "))
		st.report.TooManyFailed = true
		return
	case st.in.Frozen:
		st.report.Stopped = "frozen by the safety controller"
		return
	}
	if failed := int32(len(st.report.Failed)); len(candidates) > 0 && unavailable >= ip.MaxUnavailable && unavailable-failed < ip.MaxUnavailable {
		// Within maxFailed, but the failed Machines (cordoned until
		// retried) are what hold every maxUnavailable slot: the rollout
		// is stopped by them all the same, and says so.
		st.report.Stopped = fmt.Sprintf("%d in-place updates to %s failed; their Machines stay cordoned until retried and take %d of maxUnavailable %d: %s",
			failed, n.name, failed, ip.MaxUnavailable, brief.List(st.report.Failed, 5, "; "))
		st.report.TooManyFailed = true
		return
	}
	if ip.Manual && len(candidates) == 0 && st.report.InTransit == 0 && st.report.Left > 0 {
		st.report.AwaitingSelection = true
		return
	}

	var started []string
	var from []*ipSet
	for i, m := range candidates {
		if unavailable >= ip.MaxUnavailable {
			break
		}
		if ip.Admitted != nil && !ip.Admitted[m.Name] {
			continue
		}
		unavailable++
		s := sources[i]
		s.spec--
		s.out[m.Name] = true
		if len(from) == 0 || from[len(from)-1] != s {
			from = append(from, s)
		}
		started = append(started, m.Name)
	}
	if len(started) == 0 {
		return
	}
	for _, s := range from {
		st.write(s, fmt.Sprintf("%d moving out in place", len(s.out)))
	}
	n.spec += int32(len(started))
	for _, name := range started {
		n.in[name] = true
	}
	st.write(n, fmt.Sprintf("%d moving in (started %s)", len(started), strings.Join(started, ", ")))
	for _, name := range started {
		st.steps = append(st.steps, Step{Machine: name, Target: n.name, Why: "update in place to " + n.name})
	}
	st.report.Started = started
	st.report.InTransit += int32(len(started))
}

// compact keeps one write per set, its last, with every reason: a set's
// count depends on its own replicas and lists only, so each write is
// self-consistent whatever the order; the order that matters is that of
// the Machine steps against the set writes they follow (a Machine is
// marked for deletion before its set drops it from moving-out; it gets
// its target after both lists hold it), which keeping the last write of
// each set preserves.
func compact(steps []Step) []Step {
	last := map[string]int{}
	whys := map[string][]string{}
	for i, s := range steps {
		if s.Set != "" {
			last[s.Set] = i
			whys[s.Set] = append(whys[s.Set], s.Why)
		}
	}
	out := make([]Step, 0, len(steps))
	for i, s := range steps {
		if s.Set != "" {
			if last[s.Set] != i {
				continue
			}
			s.Why = strings.Join(whys[s.Set], "; ")
		}
		out = append(out, s)
	}
	return out
}

// clearStale removes the target of Machines whose update failed towards a
// set that is no longer the new one (the template changed since, a fix
// most often): as a person's retry would, so the machine controller
// uncordons them and clears their status, and they are updated towards
// the new template like the others. Those given back only: a Machine
// still on a list is closed first.
func (st *ipState) clearStale(listed map[string]bool) {
	var stale []string
	for name, m := range st.members {
		if m.Target != "" && m.Target != st.newSet.name && !listed[name] && !m.Deleting &&
			m.UpdateTarget == m.Target && m.Phase == v1alpha1.InPlaceFailed {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	for _, name := range stale {
		st.steps = append(st.steps, Step{Machine: name, Clear: true,
			Why: fmt.Sprintf("failed towards %s, an old template: retried towards %s", st.members[name].Target, st.newSet.name)})
	}
}

// write appends a step writing s as it is now; a step right after one of
// the same set replaces it (nothing was written in between).
func (st *ipState) write(s *ipSet, why string) {
	step := Step{Set: s.name, Replicas: s.spec, MovingOut: sorted(s.out), MovingIn: sorted(s.in), Why: why}
	s.whys = append(s.whys, why)
	if k := len(st.steps) - 1; k >= 0 && st.steps[k].Set == s.name {
		step.Why = st.steps[k].Why + "; " + why
		st.steps[k] = step
		return
	}
	st.steps = append(st.steps, step)
}

func (st *ipState) set(name string) *ipSet {
	for _, s := range st.sets {
		if s.name == name {
			return s
		}
	}
	return nil
}

func toSet(names []string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		if n != "" {
			out[n] = true
		}
	}
	return out
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
