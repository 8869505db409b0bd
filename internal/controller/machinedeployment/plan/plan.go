package plan

import (
	"fmt"
	"sort"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Modes of a plan: what kind of decision it is.
const (
	ModeScale    = "scale"
	ModeRolling  = "rolling"
	ModeRecreate = "recreate"
	ModeOnDelete = "on-delete"
)

// Result is a plan: a target per MachineSet, old sets first (oldest
// first), then the new set (a set being deleted, when listed, stays at 0
// and is never written).
type Result struct {
	Mode    string
	Targets []Target
	// Steps (strategy InPlace) are the writes, in order; Targets then
	// only summarise them, except a Create.
	Steps []Step
	// InPlace (strategy InPlace) says what the plan found.
	InPlace *InPlaceReport
	// Held: a rolling step smaller than the batch was held back (see
	// hold); the controller comes back after its coalescing delay.
	Held bool
}

// Target is what one MachineSet should have after this reconcile.
type Target struct {
	// Name is the set's; "" for the new set when Create.
	Name string
	// Create: the new set does not exist yet; create it with To.
	Create   bool
	From, To int32
	// Annotate: write the set's replica annotations (the deployment's
	// replicas and budget) even if To == From, so that it counts as sized
	// for the current replicas (see isScalingEvent).
	Annotate bool
	// Why says, for the rollout log, why To is what it is.
	Why string
	// held: the set should grow further but may not yet (surge budget,
	// freeze); it is not sized for the current replicas, so its replica
	// annotations stay as they are and the scaling event stays pending.
	held bool
}

// Writes are the targets that need a write, shrinks first (so the fleet
// never grows past its budget in between), then by name.
func (r Result) Writes() []Target {
	var out []Target
	for _, t := range r.Targets {
		if t.Create || t.To != t.From || t.Annotate {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if gi, gj := out[i].To-out[i].From, out[j].To-out[j].From; gi != gj {
			return gi < gj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Plan decides the spec.replicas of every MachineSet for this reconcile.
// A paused deployment, or one scaled since its sets were last sized, only
// scales (proportionally, see scale); otherwise the strategy decides.
// A frozen deployment grows no set.
func Plan(in Input) Result {
	var r Result
	switch {
	case in.Paused || isScalingEvent(in.Replicas, in.live()):
		r = Result{Mode: ModeScale, Targets: scale(in)}
	case in.Strategy == v1alpha1.InPlaceStrategy && in.InPlace != nil:
		// Its targets are decided whole: no freeze cut, no annotation
		// refresh (every set step writes the replica annotations).
		return inPlace(in)
	case in.Strategy == v1alpha1.RecreateStrategy:
		r = Result{Mode: ModeRecreate, Targets: recreate(in)}
	case in.Strategy == v1alpha1.OnDeleteStrategy:
		r = Result{Mode: ModeOnDelete, Targets: onDelete(in)}
	default:
		r = Result{Mode: ModeRolling, Targets: rolling(in)}
	}
	for i := range r.Targets {
		in.finish(&r.Targets[i])
	}
	if r.Mode == ModeRolling {
		r.Held = hold(in, r.Targets)
	}
	return r
}

// finish applies the freeze and decides the annotation refresh.
func (in Input) finish(t *Target) {
	if in.Frozen && t.To > t.From {
		t.Why += fmt.Sprintf("; frozen: held at %d", t.From)
		t.To, t.held = t.From, true
	}
	if t.Create || t.To == 0 || t.held {
		return
	}
	s := in.set(t.Name)
	t.Annotate = !s.HasDesired || s.Desired != in.Replicas || s.MaxReplicas != in.Replicas+in.MaxSurge
}

// live are the sets not being deleted, the new one last.
func (in Input) live() []Set {
	var out []Set
	for _, s := range in.Old {
		if !s.Deleting {
			out = append(out, s)
		}
	}
	if in.New != nil {
		out = append(out, *in.New)
	}
	return out
}

func (in Input) set(name string) Set {
	for _, s := range in.live() {
		if s.Name == name {
			return s
		}
	}
	return Set{}
}

// newTarget is the target of the new set: Create when it does not exist.
func (in Input) newTarget(to int32, why string) Target {
	if in.New == nil {
		return Target{Create: true, To: to, Why: why}
	}
	return Target{Name: in.New.Name, From: in.New.Spec, To: to, Why: why}
}

func sum(sets []Set, f func(Set) int32) int32 {
	var n int32
	for _, s := range sets {
		n += f(s)
	}
	return n
}
