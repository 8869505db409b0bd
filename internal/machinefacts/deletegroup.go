package machinefacts

import (
	"cmp"
	"strconv"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// DefaultDeletePriority is a Machine's delete priority without the
// priority annotation, or with one that is not a number.
const DefaultDeletePriority = 3

// DeleteGroup is what a Machine's annotations say about when a
// scale-down takes it: the cluster-autoscaler's delete-machine annotation
// first, then by the priority annotation, lowest first. A MachineSet's
// scale-down deletes by group first, then, within a group, the
// Unavailable Machines before the available ones (then by phase, zone and
// delete policy): the MachineDeployment's planner counts on exactly that
// to know how many available Machines a set keeps at a smaller size
// (docs/rollout.md, "Which Machines a scale-down takes").
type DeleteGroup struct {
	// Marked: the delete-machine annotation is on the Machine.
	Marked bool
	// Priority is the priority annotation, else DefaultDeletePriority.
	Priority int
}

// DeleteGroupOf reads a Machine's DeleteGroup.
func DeleteGroupOf(m *v1alpha1.Machine) DeleteGroup {
	g := DeleteGroup{Priority: DefaultDeletePriority}
	_, g.Marked = m.Annotations[v1alpha1.DeleteMachineAnnotation]
	if v, ok := m.Annotations[v1alpha1.PriorityAnnotation]; ok {
		if p, err := strconv.Atoi(v); err == nil {
			g.Priority = p
		}
	}
	return g
}

// Compare orders groups as a scale-down takes them: negative when g goes
// first.
func (g DeleteGroup) Compare(o DeleteGroup) int {
	if g.Marked != o.Marked {
		if g.Marked {
			return -1
		}
		return 1
	}
	return cmp.Compare(g.Priority, o.Priority)
}
