package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// grantWrite gathers the grants of one RequestAll: each budget as read
// (the patch's base, carrying its resourceVersion) and as granted.
type grantWrite struct {
	bases   map[*v1alpha1.MachineDisruptionBudget]*v1alpha1.MachineDisruptionBudget
	order   []*v1alpha1.MachineDisruptionBudget
	granted map[string][]*v1alpha1.MachineDisruptionBudget // by Machine
}

// add records a's grant on each budget of need, in memory: the next
// asks see one disruption fewer left.
func (w *grantWrite) add(need []*v1alpha1.MachineDisruptionBudget, a *Ask, now time.Time) {
	if len(need) == 0 {
		return
	}
	if w.bases == nil {
		w.bases, w.granted = map[*v1alpha1.MachineDisruptionBudget]*v1alpha1.MachineDisruptionBudget{}, map[string][]*v1alpha1.MachineDisruptionBudget{}
	}
	for _, b := range need {
		if w.bases[b] == nil {
			w.bases[b] = b.DeepCopy()
			w.order = append(w.order, b)
		}
		b.Status.DisruptedMachines = append(b.Status.DisruptedMachines, v1alpha1.DisruptedMachine{
			Name: a.Machine.Name, Kind: a.Kind, GrantedAt: metav1.NewTime(now),
		})
		b.Status.DisruptionsAllowed--
	}
	w.granted[a.Machine.Name] = need
}

// write patches each budget granted under its resourceVersion as read.
// When one fails, the grants written before it are released.
func (w *grantWrite) write(ctx context.Context, g *Gate) error {
	for i, b := range w.order {
		base := w.bases[b]
		err := g.Client.Status().Patch(ctx, b, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			continue
		}
		for _, done := range w.order[:i] {
			added := done.Status.DisruptedMachines[len(w.bases[done].Status.DisruptedMachines):]
			mine := func(d v1alpha1.DisruptedMachine) bool { // a grant of this call
				return slices.ContainsFunc(added, func(o v1alpha1.DisruptedMachine) bool { return o.Name == d.Name && o.Kind == d.Kind })
			}
			if rerr := g.release(ctx, []*v1alpha1.MachineDisruptionBudget{done}, mine); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return fmt.Errorf("recording %d grant(s) on MachineDisruptionBudget %s: %w", len(b.Status.DisruptedMachines)-len(base.Status.DisruptedMachines), b.Name, err)
	}
	return nil
}
