package plan

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// Tally is Count kept up to date one Machine at a time: Set replaces
// what it knows of a Machine, Forget drops one, and Counts answers what
// Count would answer for the Machines it holds. Count reads every Machine
// of a set at every call; at 5000 Machines the deployment's reconcile,
// run at each Machine event, spent a third of the manager's CPU there
// (docs/benchmarks.md). A Tally's Set and Forget cost the same whatever
// the set's size, and so does Counts, but for the Machines Ready for
// less than minReady (a rollout's last wave at most, none at
// minReadySeconds 0), which it looks at each call, and a change of
// minReady, of supersededAt or a clock gone back, which reads every
// Machine once. Not safe for concurrent use.
type Tally struct {
	entries map[types.UID]tallyEntry
	// most is the most entries held since entries was made (shrunk).
	most int
	// machines and terminating are Counts' fields of the same name.
	machines, terminating, failed int32
	// live are the Machines neither preserved nor being deleted: Left
	// with no supersededAt. left is Left at leftAt, when leftKnown.
	live      int32
	leftAt    time.Time
	left      int32
	leftKnown bool
	// groups tallies the live Machines that have not failed by delete
	// group. ok of them may become available (since set); of those,
	// matured are available at (minReady, now), the others are pending.
	groups          map[machinefacts.DeleteGroup]*groupCounts
	minReady        time.Duration
	now             time.Time
	maturedComputed bool
}

// groupCounts are one delete group's live, not failed Machines.
type groupCounts struct {
	unavailable int32 // Unavailable: no wait makes them available
	matured     int32
	pending     map[types.UID]int64 // ready since (unixNanos), not yet minReady ago
	mostPending int                 // the most pending held since it was made (shrunk)
}

// tallyEntry is what Count reads of one Machine: its times as unixNanos,
// 40 bytes where time.Time's made 96 (a map of 5000 entries, one set's,
// took 960 KiB).
type tallyEntry struct {
	created  int64
	since    int64 // Ready since, when ok
	group    machinefacts.DeleteGroup
	skipped  bool // preserved and not being deleted: not counted at all
	deleting bool
	failed   bool
	ok       bool // machinefacts.UntilAvailable's ok
	matured  bool // counted in its group's matured (else pending), when ok
}

// same compares what two entries count.
func (e tallyEntry) same(o tallyEntry) bool {
	e.matured, o.matured = false, false
	return e == o
}

// unixNanos is t as Unix nanoseconds, the zero time as the least of them:
// instants compare as their times do (Kubernetes' times are within the
// years 1678–2262 that UnixNano covers).
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

// entryOf reads m as Count does.
func entryOf(m *v1alpha1.Machine) tallyEntry {
	e := tallyEntry{deleting: !m.DeletionTimestamp.IsZero(), created: unixNanos(m.CreationTimestamp.Time)}
	if !e.deleting && machinefacts.Preserved(m) {
		return tallyEntry{skipped: true}
	}
	if e.deleting {
		return e
	}
	e.failed = m.Status.FailureReason != ""
	if e.failed {
		return e
	}
	e.group = machinefacts.DeleteGroupOf(m)
	since, ok := machinefacts.AvailableSince(m)
	if e.ok = ok; ok {
		e.since = unixNanos(since)
	}
	return e
}

// NewTally makes an empty Tally.
func NewTally() *Tally {
	return &Tally{entries: map[types.UID]tallyEntry{}, groups: map[machinefacts.DeleteGroup]*groupCounts{}}
}

// Len is how many Machines it holds, preserved ones included.
func (t *Tally) Len() int { return len(t.entries) }

// Set counts m as it is now, in place of what was known of it, and says
// whether that changed what it counts of m.
func (t *Tally) Set(m *v1alpha1.Machine) (changed bool) {
	e := entryOf(m)
	old, had := t.entries[m.UID]
	if had {
		if old.same(e) {
			return false
		}
		t.remove(m.UID, t.entries[m.UID])
	}
	t.add(m.UID, e)
	t.entries = shrunk(t.entries, &t.most)
	return true
}

// Forget drops the Machine of uid.
func (t *Tally) Forget(uid types.UID) {
	if e, ok := t.entries[uid]; ok {
		t.remove(uid, e)
		t.entries = shrunk(t.entries, &t.most)
	}
}

// shrinkFrom is the least room worth giving back: a map of a few hundred
// entries costs a few KiB, however many it once held.
const shrinkFrom = 256

// shrunk is m, or a copy of m sized for its entries once they are a
// quarter of *most, the most m held since it was made; *most follows. A
// Go map keeps the room of its deleted entries: the tally of a rollout's
// old set, emptied one Machine at a time, would hold its 5000 Machines'
// room to the end. A copy costs one entry's move per entry removed, on
// the whole.
func shrunk[V any](m map[types.UID]V, most *int) map[types.UID]V {
	*most = max(*most, len(m))
	if *most < shrinkFrom || len(m) > *most/4 {
		return m
	}
	smaller := make(map[types.UID]V, len(m))
	for k, v := range m {
		smaller[k] = v
	}
	*most = len(smaller)
	return smaller
}

func (t *Tally) add(uid types.UID, e tallyEntry) {
	if e.skipped {
		t.entries[uid] = e
		return
	}
	t.machines++
	if e.deleting {
		t.terminating++
		t.entries[uid] = e
		return
	}
	t.live++
	if t.leftKnown && t.leftsAt(e) {
		t.left++
	}
	if e.failed {
		t.failed++
		t.entries[uid] = e
		return
	}
	g := t.group(e.group)
	switch {
	case !e.ok:
		g.unavailable++
	case t.maturedComputed && t.maturedAt(e):
		e.matured = true
		g.matured++
	default:
		g.pending[uid] = e.since
		g.pending = shrunk(g.pending, &g.mostPending)
	}
	t.entries[uid] = e
}

func (t *Tally) remove(uid types.UID, e tallyEntry) {
	delete(t.entries, uid)
	if e.skipped {
		return
	}
	t.machines--
	if e.deleting {
		t.terminating--
		return
	}
	t.live--
	if t.leftKnown && t.leftsAt(e) {
		t.left--
	}
	if e.failed {
		t.failed--
		return
	}
	g := t.groups[e.group]
	switch {
	case !e.ok:
		g.unavailable--
	case e.matured:
		g.matured--
	default:
		delete(g.pending, uid)
		g.pending = shrunk(g.pending, &g.mostPending)
	}
	if g.unavailable == 0 && g.matured == 0 && len(g.pending) == 0 {
		delete(t.groups, e.group)
	}
}

func (t *Tally) group(g machinefacts.DeleteGroup) *groupCounts {
	c := t.groups[g]
	if c == nil {
		c = &groupCounts{pending: map[types.UID]int64{}}
		t.groups[g] = c
	}
	return c
}

// leftsAt: a Machine created after the set was superseded is not left
// (Count).
func (t *Tally) leftsAt(e tallyEntry) bool {
	return t.leftAt.IsZero() || e.created <= unixNanos(t.leftAt)
}

func (t *Tally) maturedAt(e tallyEntry) bool {
	return untilMatured(e.since, t.minReady, t.now) <= 0
}

// untilMatured is the time from now until a Machine Ready since becomes
// available; since the zero time, it was long ago.
func untilMatured(since int64, minReady time.Duration, now time.Time) time.Duration {
	if since == math.MinInt64 {
		return math.MinInt64
	}
	return time.Duration(since + int64(minReady) - now.UnixNano())
}

// Counts is Count of the Machines held, with the same arguments.
func (t *Tally) Counts(minReady time.Duration, now, supersededAt time.Time) (c Counts, next time.Duration) {
	if !t.leftKnown || !t.leftAt.Equal(supersededAt) {
		t.leftAt, t.left, t.leftKnown = supersededAt, 0, true
		for _, e := range t.entries {
			if !e.skipped && !e.deleting && t.leftsAt(e) {
				t.left++
			}
		}
	}
	t.mature(minReady, now)
	c = Counts{Machines: t.machines, Terminating: t.terminating, Failed: t.failed, Left: t.left}
	if supersededAt.IsZero() {
		c.Left = t.live
	}
	var order deleteOrder
	for g, gc := range t.groups {
		c.Available += gc.matured
		order.groups = append(order.groups, groupTally{group: g, available: gc.matured, unavailable: gc.unavailable + int32(len(gc.pending))})
		for _, since := range gc.pending {
			if left := untilMatured(since, minReady, now); next == 0 || left < next {
				next = left
			}
		}
	}
	c.AvailableAhead = order.availableAhead()
	return c, next
}

// mature moves the pending Machines available at (minReady, now) to
// matured: each once, while minReady stays and the clock goes forward;
// otherwise every Machine is classified again.
func (t *Tally) mature(minReady time.Duration, now time.Time) {
	if !t.maturedComputed || minReady != t.minReady || now.Before(t.now) {
		t.minReady, t.now, t.maturedComputed = minReady, now, true
		for uid, e := range t.entries {
			if e.skipped || e.deleting || e.failed || !e.ok {
				continue
			}
			g := t.groups[e.group]
			if e.matured {
				g.matured--
				g.pending[uid] = e.since
				e.matured = false
				t.entries[uid] = e
			}
		}
	}
	t.now = now
	for _, g := range t.groups {
		g.mostPending = max(g.mostPending, len(g.pending))
		for uid := range g.pending {
			if e := t.entries[uid]; t.maturedAt(e) {
				delete(g.pending, uid)
				g.matured++
				e.matured = true
				t.entries[uid] = e
			}
		}
		g.pending = shrunk(g.pending, &g.mostPending)
	}
}
