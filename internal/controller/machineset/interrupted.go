package machineset

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// interruptedReplaceWait bounds how long an interrupted Machine waits
// for its replacement to be created before it is deleted all the same:
// the provider takes its VM away within minutes (two for an EC2 spot
// interruption), and its Node must be drained before that, whether or
// not the set can create right now (frozen, creation window full,
// backing off after failures).
const interruptedReplaceWait = 10 * time.Second

// isInterrupted reports whether the provider announced it takes the
// Machine's VM away (docs/interruptions.md).
func isInterrupted(m *v1alpha1.Machine) bool {
	interrupted, _ := machinefacts.Interrupted(m)
	return interrupted
}

// deleteInterrupted deletes the interrupted Machines once their
// replacements exist (missing, the replicas the set still lacks without
// them, is 0 or less), or once they waited interruptedReplaceWait for
// them; it returns how long until the next of those waits ends (0: none
// left). Replacement first: the new Machine is on its way before the
// old Node's pods are evicted. Like a Failed Machine, an interrupted one
// is deleted without asking the disruption budgets: the provider does
// not ask either.
func (r *Reconciler) deleteInterrupted(ctx context.Context, s *scope, interrupted []*v1alpha1.Machine, missing int) (time.Duration, error) {
	var deleted []string
	var next time.Duration
	defer func() {
		if len(deleted) > 0 {
			r.event(s.ms, corev1.EventTypeNormal, "MachineDeleted", "deleting Machine(s) whose VMs their provider takes away, after creating their replacements: "+brief.List(deleted, 5, ", "))
		}
	}()
	for _, m := range interrupted {
		_, since := machinefacts.Interrupted(m)
		if wait := since.Add(interruptedReplaceWait).Sub(s.now); missing > 0 && wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		why := "its provider takes its VM away (Interrupted)"
		if missing > 0 {
			why += "; its replacement could not be created within " + interruptedReplaceWait.String()
		}
		if err := r.deleteMachine(ctx, s, m, why); err != nil {
			return 0, err
		}
		deleted = append(deleted, m.Name)
	}
	return next, nil
}
