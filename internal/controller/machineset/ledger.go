package machineset

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// A ledger is one set's Machines, each classified once when its event
// arrives, with the counts the set's status and its scale read kept as
// sums: a reconcile woken by one Machine's event reads the counts, not
// every Machine of the set. At 5000 Machines, reading and classifying
// every Machine at every event was 44 % of the manager's CPU in a rolling
// update (docs/benchmarks.md, "Constant work per event").
//
// A Machine's class depends on the set's selector, template, minimum
// ready time and moving-out list: its context. A set whose context
// changed (a new template, each step of an in-place update) lists and
// classifies its Machines again, once; a change of spec.replicas does
// not. So does a set whose ledger was made changed.FullPassEvery ago:
// an event lost on the way (an orphan's, when the read of the sets it
// may join failed) is made good within that.
type ledger struct {
	context string
	// fullAt is when the ledger was made from every Machine of the set.
	fullAt time.Time
	// minReady is the set's spec.minReadySeconds; template, its labels
	// and movingOut (names) the rest of the context.
	minReady       time.Duration
	template       *v1alpha1.MachineTemplateSpec
	templateLabels labels.Selector
	movingOut      map[string]bool

	// machines are the set's Machines by name, deleting ones included:
	// the cache's own objects (read them, change copies), an adopted
	// Machine as the adoption's answer until its event replaces it, and
	// during a reconcile what it changed (scope.putUntilEnd).
	machines map[string]*v1alpha1.Machine
	entries  map[string]entry

	// kinds counts the Machines of each kind; joined and inCreation
	// split the alive ones by whether their Node ever joined.
	kinds              [kindCount]int
	joined, inCreation int
	heldEarly          int
	// replicas, fullyLabeled and ready are the status's counts of the
	// set's own Machines.
	replicas, fullyLabeled, ready int32
	// available counts the ready replicas Ready for minReady at now;
	// pending are the others, by when they became Ready.
	available int32
	pending   map[string]time.Time
	now       time.Time
	// The Machines a reconcile reads one by one, by name: few, but for
	// stale after a change of the template's labels, annotations, node
	// template or lifecycle, which propagate writes to each.
	failed, interrupted, opFailed, autoKept, waits, stale map[string]bool
}

// kind is what a set's scale makes of a Machine, in scale's order.
type kind int

const (
	// kindDeleting is being deleted: counted nowhere.
	kindDeleting kind = iota
	// kindPreserved is kept by preservation, not one of the replicas
	// (docs/preservation.md).
	kindPreserved
	// kindFailed failed and is replaced.
	kindFailed
	// kindInterrupted loses its VM to its provider (interrupted.go).
	kindInterrupted
	// kindMovingOut moves to another set in place (inplace.go).
	kindMovingOut
	// kindAlive is one of the replicas, joined or on its way.
	kindAlive
	kindCount
)

// entry is what the set reads of one Machine.
type entry struct {
	kind kind
	// replica: one of the set's replicas in its status, not deleting, not
	// preserved, not moving out (a failed or interrupted Machine is one).
	replica     bool
	everRunning bool
	// heldEarly: preserved after failing before it ever ran.
	heldEarly bool
	// labeled: has the template's labels; ready: Ready and not failed,
	// since readySince; both for a replica only.
	labeled, ready bool
	readySince     time.Time
	matured        bool // counted in available, else pending
	// opFailed: its last operation or the Machine failed (the status's
	// failedMachines, deleting ones included).
	opFailed bool
	// autoKept: kept by the set's auto-preservation (preserve.go).
	autoKept bool
	// waits: waits for a budget's grant of a disruption the set asks for.
	waits bool
	// stale: lacks what propagate writes from the template.
	stale bool
}

// ledgerContext identifies what a Machine's class depends on besides the
// Machine: the set, its selector, template and minimum ready time, and
// its moving-out list.
func ledgerContext(ms *v1alpha1.MachineSet, sel labels.Selector) string {
	data, _ := json.Marshal(ms.Spec.Template) // plain fields: Marshal does not fail
	h := fnv.New64a()
	_, _ = h.Write(data)
	return string(ms.UID) + "/" + sel.String() + "/" + strconv.Itoa(int(ms.Spec.MinReadySeconds)) + "/" +
		ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation] + "/" + strconv.FormatUint(h.Sum64(), 36)
}

// newLedger makes an empty ledger for ms in context.
func newLedger(ms *v1alpha1.MachineSet, context string) *ledger {
	movingOut := map[string]bool{}
	for _, n := range machinefacts.InPlaceNames(ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation]) {
		movingOut[n] = true
	}
	return &ledger{
		context: context, minReady: time.Duration(ms.Spec.MinReadySeconds) * time.Second,
		template: ms.Spec.Template.DeepCopy(), templateLabels: labels.SelectorFromSet(ms.Spec.Template.Metadata.Labels), movingOut: movingOut,
		machines: map[string]*v1alpha1.Machine{}, entries: map[string]entry{}, pending: map[string]time.Time{},
		failed: map[string]bool{}, interrupted: map[string]bool{}, opFailed: map[string]bool{},
		autoKept: map[string]bool{}, waits: map[string]bool{}, stale: map[string]bool{},
	}
}

// classify reads m as the set's scale, status, propagation and
// preservation do.
func (l *ledger) classify(m *v1alpha1.Machine) entry {
	e := entry{everRunning: everRunning(m)}
	deleting := !m.DeletionTimestamp.IsZero()
	preserved := machinefacts.Preserved(m)
	movingOut := l.movingOut[m.Name]
	switch {
	case deleting:
		e.kind = kindDeleting
	case preserved:
		e.kind = kindPreserved
		e.heldEarly = machinefacts.Failed(m) && !e.everRunning
	case m.Status.FailureReason != "":
		e.kind = kindFailed
	case isInterrupted(m):
		e.kind = kindInterrupted
	case movingOut:
		e.kind = kindMovingOut
	default:
		e.kind = kindAlive
	}
	e.opFailed = m.Status.LastOperation.State == v1alpha1.OperationFailed || m.Status.FailureReason != ""
	e.replica = !deleting && !preserved && !movingOut
	if e.replica {
		e.labeled = l.templateLabels.Matches(labels.Set(m.Labels))
		if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ReadyCondition); c != nil && c.Status == metav1.ConditionTrue && m.Status.FailureReason == "" {
			e.ready, e.readySince = true, c.LastTransitionTime.Time
		}
	}
	e.autoKept = !deleting && machinefacts.AutoPreserved(m) && preserved
	_, e.waits = disruptionWaiting(m)
	e.waits = e.waits && !deleting
	e.stale = !deleting && !movingOut && !upToDate(m, l.template)
	return e
}

// put records m as it is now, in place of what was known of it.
func (l *ledger) put(m *v1alpha1.Machine) {
	e := l.classify(m)
	if old, ok := l.entries[m.Name]; ok {
		l.count(m.Name, old, -1)
	}
	l.machines[m.Name] = m
	l.count(m.Name, e, 1)
}

// remove drops the Machine name: deleted, released or gone to another
// set.
func (l *ledger) remove(name string) {
	if old, ok := l.entries[name]; ok {
		l.count(name, old, -1)
	}
	delete(l.machines, name)
}

// count adds (sign 1) or takes away (-1) what e counts.
func (l *ledger) count(name string, e entry, sign int) {
	l.kinds[e.kind] += sign
	if e.kind == kindAlive {
		if e.everRunning {
			l.joined += sign
		} else {
			l.inCreation += sign
		}
	}
	if e.heldEarly {
		l.heldEarly += sign
	}
	if e.replica {
		l.replicas += int32(sign)
	}
	if e.labeled {
		l.fullyLabeled += int32(sign)
	}
	if e.ready {
		l.ready += int32(sign)
		switch {
		case sign < 0 && e.matured:
			l.available--
		case sign < 0:
			delete(l.pending, name)
		case !l.now.IsZero() && l.maturedAt(e.readySince, l.now):
			e.matured = true
			l.available++
		default:
			l.pending[name] = e.readySince
		}
	}
	mark(l.failed, name, e.kind == kindFailed, sign)
	mark(l.interrupted, name, e.kind == kindInterrupted, sign)
	mark(l.opFailed, name, e.opFailed, sign)
	mark(l.autoKept, name, e.autoKept, sign)
	mark(l.waits, name, e.waits, sign)
	mark(l.stale, name, e.stale, sign)
	if sign < 0 {
		delete(l.entries, name)
	} else {
		l.entries[name] = e
	}
}

func mark(set map[string]bool, name string, on bool, sign int) {
	switch {
	case !on:
	case sign > 0:
		set[name] = true
	default:
		delete(set, name)
	}
}

func (l *ledger) maturedAt(since, now time.Time) bool {
	return !since.Add(l.minReady).After(now)
}

// mature counts the ready replicas available at now, and says how long
// until the next pending one is. Each pending Machine moves once while
// the clock goes forward; a clock gone back counts them all again.
func (l *ledger) mature(now time.Time) (next time.Duration) {
	if now.Before(l.now) {
		for name, e := range l.entries {
			if e.matured {
				e.matured = false
				l.entries[name] = e
				l.available--
				l.pending[name] = e.readySince
			}
		}
	}
	l.now = now
	for name, since := range l.pending {
		if l.maturedAt(since, now) {
			delete(l.pending, name)
			e := l.entries[name]
			e.matured = true
			l.entries[name] = e
			l.available++
		} else if left := since.Add(l.minReady).Sub(now); next == 0 || left < next {
			next = left
		}
	}
	return next
}

// named returns the Machines of names, sorted by name.
func (l *ledger) named(names map[string]bool) []*v1alpha1.Machine {
	out := make([]*v1alpha1.Machine, 0, len(names))
	for _, n := range slices.Sorted(maps.Keys(names)) {
		out = append(out, l.machines[n])
	}
	return out
}

// alive returns the alive Machines: every Machine of the set is read,
// so only a scale-down and a set with a placement call it.
func (l *ledger) alive() []*v1alpha1.Machine {
	out := make([]*v1alpha1.Machine, 0, l.kinds[kindAlive])
	for name, e := range l.entries {
		if e.kind == kindAlive {
			out = append(out, l.machines[name])
		}
	}
	return out
}

// recounted is the ledger its Machines make when counted afresh, at the
// same time: what the sums must equal (checkLedger).
func (l *ledger) recounted(ms *v1alpha1.MachineSet) *ledger {
	fresh := newLedger(ms, l.context)
	for _, m := range l.machines {
		fresh.put(m)
	}
	fresh.mature(l.now)
	return fresh
}

// differs says how l's counts differ from other's, "" when they do not.
func (l *ledger) differs(other *ledger) string {
	type view struct {
		Kinds                                                 [kindCount]int
		Joined, InCreation, HeldEarly                         int
		Replicas, FullyLabeled, Ready, Available              int32
		Pending                                               map[string]time.Time
		Entries                                               map[string]entry
		Failed, Interrupted, OpFailed, AutoKept, Waits, Stale map[string]bool
	}
	of := func(x *ledger) view {
		return view{x.kinds, x.joined, x.inCreation, x.heldEarly, x.replicas, x.fullyLabeled, x.ready, x.available, x.pending, x.entries,
			x.failed, x.interrupted, x.opFailed, x.autoKept, x.waits, x.stale}
	}
	a, b := of(l), of(other)
	if reflect.DeepEqual(a, b) {
		return ""
	}
	return fmt.Sprintf("kept %+v, recounted %+v", a, b)
}

// checkLedger makes every reconcile recount its ledger from its Machines
// and compare the two, recording a difference in ledgerDifferences: the
// package's tests set it, so every test of the set checks the sums.
var checkLedger bool

var (
	ledgerDifferencesMu sync.Mutex
	ledgerDifferences   []string
)

// checkRecount records how l differs from its recount, if it does.
func checkRecount(s *scope, l *ledger) {
	fresh := l.recounted(s.ms)
	d := l.differs(fresh)
	if d == "" {
		return
	}
	s.log.Error(nil, "the set's ledger differs from its recount", "difference", d)
	ledgerDifferencesMu.Lock()
	defer ledgerDifferencesMu.Unlock()
	ledgerDifferences = append(ledgerDifferences, s.key+": "+d)
}
