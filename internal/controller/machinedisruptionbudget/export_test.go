package machinedisruptionbudget

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Every reconcile of the package's tests makes its budget's tally again
// from its Machines and compares (checkTally); TallyDifferences returns
// what differed.
func init() { checkTally.Store(true) }

// TallyDifferences returns the differences between a budget's kept tally
// and one made again from its Machines that the reconciles found, and
// forgets them.
func TallyDifferences() []string {
	tallyDifferencesMu.Lock()
	defer tallyDifferencesMu.Unlock()
	out := tallyDifferences
	tallyDifferences = nil
	return out
}

// AgeTally dates the budget key's kept tally back by d, as if it had been
// made from every Machine d earlier; false when no tally is kept (a
// reconcile holds it, or none ran).
func AgeTally(r *Reconciler, key types.NamespacedName, d time.Duration) bool {
	return r.tallies.Edit(key, func(t *kept) { t.fullAt = t.fullAt.Add(-d) })
}

// NoteChanged records, as the watch does, that Machine name of the
// budget key changed (the benchmark's event).
func (r *Reconciler) NoteChanged(key types.NamespacedName, name string) { r.tallies.Note(key, name) }

// WithoutTallyCheck turns checkTally off until the returned function
// turns it back on: a benchmark measures the reconcile alone.
func WithoutTallyCheck() func() {
	checkTally.Store(false)
	return func() { checkTally.Store(true) }
}
