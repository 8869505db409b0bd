package machine

import (
	"context"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// ReplacementAllowed is the meltdown check at the reconciler's clock, for
// the package's envtests.
func (r *Reconciler) ReplacementAllowed(ctx context.Context, m *v1alpha1.Machine) (bool, string, error) {
	return r.replacementAllowed(ctx, m, r.now())
}

// LedgerTTL is how long a replacement decision waits to show in the cache.
const LedgerTTL = ledgerTTL
