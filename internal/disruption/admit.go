package disruption

import (
	"context"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Admit asks for the Machines in order, all for disruptions of one kind —
// the next Machines of an in-place update — through RequestAll, and
// returns those granted and the Decision of the first one held back
// (Allowed when none is). A Conflict error grants none of them; another
// error may come with those granted, which the caller may act on.
func (g *Gate) Admit(ctx context.Context, machines []*v1alpha1.Machine, kind v1alpha1.DisruptionKind) ([]*v1alpha1.Machine, Decision, error) {
	asks := make([]Ask, len(machines))
	for i, m := range machines {
		asks[i] = Ask{Machine: m, Kind: kind}
	}
	ds, err := g.RequestAll(ctx, asks)
	var granted []*v1alpha1.Machine
	for i, d := range ds {
		if !d.Allowed {
			return granted, d, err
		}
		granted = append(granted, machines[i])
	}
	return granted, Decision{Allowed: true}, err
}
