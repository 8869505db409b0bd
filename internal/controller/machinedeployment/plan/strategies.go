package plan

import "fmt"

// recreate scales every old set to 0 and, once no old set wants, has or
// reports a Machine any more, creates (or grows) the new set to replicas:
// old and new Machines never exist at once.
func recreate(in Input) []Target {
	var targets []Target
	var waiting int32
	for _, o := range in.Old {
		waiting += max(o.spec(), o.Machines, o.Reported)
		if !o.Deleting {
			targets = append(targets, Target{Name: o.Name, From: o.spec(), To: 0, Why: "Recreate: every old Machine goes first"})
		}
	}
	if waiting > 0 {
		if in.New != nil {
			targets = append(targets, in.newTarget(in.New.Spec, fmt.Sprintf("waiting for %d old Machines to be gone", waiting)))
		}
		return targets
	}
	return append(targets, in.newTarget(in.Replicas, "no old Machine left"))
}

// onDelete never deletes an old Machine: each old set keeps what it has
// left (its Machines not being deleted that existed when it was superseded,
// never more than its spec.replicas), and the new set fills up to replicas.
func onDelete(in Input) []Target {
	var targets []Target
	var kept int32
	for _, o := range in.Old {
		if o.Deleting {
			continue
		}
		to := max(0, min(o.spec(), o.Left))
		kept += to
		why := "OnDelete: keeps what it has left"
		if to < o.spec() {
			why = fmt.Sprintf("OnDelete: %d deleted by hand", o.spec()-to)
		}
		targets = append(targets, Target{Name: o.Name, From: o.spec(), To: to, Why: why})
	}
	return append(targets, in.newTarget(max(0, in.Replicas-kept), fmt.Sprintf("replicas − %d old kept", kept)))
}
