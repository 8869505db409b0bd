package changed

import "time"

// FullPassEvery is how often a reconcile that keeps what it made of the
// objects it reads (a set's ledger, a health check's verdicts) reads
// every one of them again instead of only the named ones: an event lost
// on the way (a failed cache read in its mapping, a bug) is made good
// within this, and the reconcile of an object without events comes back
// for it (FullPassIn).
const FullPassEvery = 5 * time.Minute

// FullPassDue reports whether what was made by reading every object at
// fullAt is due to be made again at now: FullPassEvery passed, or the
// clock went back past fullAt.
func FullPassDue(fullAt, now time.Time) bool {
	return DueEvery(fullAt, now, FullPassEvery)
}

// DueEvery reports whether something done at last and redone every
// period is due at now: the period passed, or the clock went back past
// last (so a clock set back never postpones it).
func DueEvery(last, now time.Time, period time.Duration) bool {
	return now.Sub(last) >= period || now.Before(last)
}

// FullPassIn is how long after now the full pass following the one at
// fullAt is due; at least a millisecond, so that it is a requeue.
func FullPassIn(fullAt, now time.Time) time.Duration {
	return max(fullAt.Add(FullPassEvery).Sub(now), time.Millisecond)
}
