package machineset

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
