package machineset

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Every reconcile of the package's tests recounts its set's ledger and
// compares (checkLedger); LedgerDifferences returns what differed.
func init() { checkLedger = true }

// LedgerDifferences returns the differences between a set's ledger and
// its recount that the reconciles found, and forgets them.
func LedgerDifferences() []string {
	ledgerDifferencesMu.Lock()
	defer ledgerDifferencesMu.Unlock()
	out := ledgerDifferences
	ledgerDifferences = nil
	return out
}

// AgeLedger dates the set key's kept ledger back by d, as if it had been
// made from every Machine d earlier; false when no ledger is kept (a
// reconcile holds it, or none ran).
func AgeLedger(r *Reconciler, key types.NamespacedName, d time.Duration) bool {
	return r.ledgers.Edit(key, func(l *ledger) { l.fullAt = l.fullAt.Add(-d) })
}
