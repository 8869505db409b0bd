package disruption

import (
	"context"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Admit asks for the Machines in order — a MachineSet's scale-down
// victims, the next Machines of an in-place update — and returns those
// granted, stopping at the first one held back (whose Decision it
// returns): the ones after it, no more available, would be held back too,
// and asking for them would only mark each one waiting. A Conflict error
// comes with the Machines granted before it, which the caller may act on.
func (g *Gate) Admit(ctx context.Context, machines []*v1alpha1.Machine, kind v1alpha1.DisruptionKind) ([]*v1alpha1.Machine, Decision, error) {
	var granted []*v1alpha1.Machine
	for _, m := range machines {
		d, err := g.Request(ctx, m, kind)
		if err != nil {
			return granted, Decision{}, err
		}
		if !d.Allowed {
			return granted, d, nil
		}
		granted = append(granted, m)
	}
	return granted, Decision{Allowed: true}, nil
}
