package machinehealthcheck

import "k8s.io/apimachinery/pkg/types"

// Every reconcile of the package's tests that judges only some Machines
// judges them all too and compares (checkJudgements);
// JudgementDifferences returns what differed.
func init() { checkJudgements.Store(true) }

// JudgementDifferences returns the differences between a health check's
// kept verdicts and a judgement of every Machine that the reconciles
// found, and forgets them.
func JudgementDifferences() []string {
	judgementDifferencesMu.Lock()
	defer judgementDifferencesMu.Unlock()
	out := judgementDifferences
	judgementDifferences = nil
	return out
}

// NoteChanged records, as the watch does, that Machine name of the
// health check key changed (the benchmark's event).
func (r *Reconciler) NoteChanged(key types.NamespacedName, name string) { r.judgements.Note(key, name) }

// WithoutJudgementCheck turns checkJudgements off until the returned
// function turns it back on: a benchmark measures the reconcile alone.
func WithoutJudgementCheck() func() {
	checkJudgements.Store(false)
	return func() { checkJudgements.Store(true) }
}

// FirstRecordsPerReconcile is how many first passing records one
// reconcile writes at most.
const FirstRecordsPerReconcile = firstRecordsPerReconcile
