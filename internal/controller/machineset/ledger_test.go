package machineset

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// setCounts is what a reconcile reads of a set's Machines: the scale's
// buckets, the status's counts and the Machines read one by one.
type setCounts struct {
	Alive, InCreation, Joined, HeldEarly                         int
	Replicas, Preserved, FullyLabeled, Ready, Available          int32
	NextAvailable                                                time.Duration
	Failed, Interrupted, FailedSummaries, AutoKept, Waits, Stale []string
}

// countEvery reads every Machine as the set's reconcile did before it
// kept a ledger: its scale's loop, its status's loop, the auto-preserved
// Machines, the waiting ones and propagate's check, each written out
// again here from the Machines' fields.
func countEvery(machines map[string]*v1alpha1.Machine, ms *v1alpha1.MachineSet, now time.Time) setCounts {
	var c setCounts
	movingOut := map[string]bool{}
	for _, n := range machinefacts.InPlaceNames(ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation]) {
		movingOut[n] = true
	}
	minReady := time.Duration(ms.Spec.MinReadySeconds) * time.Second
	templateLabels := labels.SelectorFromSet(ms.Spec.Template.Metadata.Labels)
	for _, m := range machines {
		deleting := !m.DeletionTimestamp.IsZero()
		// scale
		switch {
		case deleting:
		case machinefacts.Preserved(m):
			if machinefacts.Failed(m) && !everRunning(m) {
				c.HeldEarly++
			}
		case m.Status.FailureReason != "":
			c.Failed = append(c.Failed, m.Name)
		case isInterrupted(m):
			c.Interrupted = append(c.Interrupted, m.Name)
		case movingOut[m.Name]:
		default:
			c.Alive++
			if everRunning(m) {
				c.Joined++
			} else {
				c.InCreation++
			}
		}
		// status
		if m.Status.LastOperation.State == v1alpha1.OperationFailed || m.Status.FailureReason != "" {
			c.FailedSummaries = append(c.FailedSummaries, m.Name)
		}
		// preserve, budget, propagate
		if !deleting && machinefacts.AutoPreserved(m) && machinefacts.Preserved(m) {
			c.AutoKept = append(c.AutoKept, m.Name)
		}
		if _, waits := disruptionWaiting(m); waits && !deleting {
			c.Waits = append(c.Waits, m.Name)
		}
		if !deleting && !movingOut[m.Name] && !upToDate(m, &ms.Spec.Template) {
			c.Stale = append(c.Stale, m.Name)
		}
		if deleting {
			continue
		}
		if machinefacts.Preserved(m) {
			c.Preserved++
			continue
		}
		if movingOut[m.Name] {
			continue
		}
		c.Replicas++
		if templateLabels.Matches(labels.Set(m.Labels)) {
			c.FullyLabeled++
		}
		r := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ReadyCondition)
		if r == nil || r.Status != metav1.ConditionTrue || m.Status.FailureReason != "" {
			continue
		}
		c.Ready++
		if left := r.LastTransitionTime.Add(minReady).Sub(now); left <= 0 {
			c.Available++
		} else if c.NextAvailable == 0 || left < c.NextAvailable {
			c.NextAvailable = left
		}
	}
	for _, s := range [][]string{c.Failed, c.Interrupted, c.FailedSummaries, c.AutoKept, c.Waits, c.Stale} {
		slices.Sort(s)
	}
	return c
}

// countLedger is what the reconcile reads from the ledger instead.
func countLedger(l *ledger, now time.Time) setCounts {
	next := l.mature(now)
	names := func(set map[string]bool) []string {
		var out []string
		for _, m := range l.named(set) {
			out = append(out, m.Name)
		}
		return out
	}
	return setCounts{
		Alive: l.kinds[kindAlive], InCreation: l.inCreation, Joined: l.joined, HeldEarly: l.heldEarly,
		Replicas: l.replicas, Preserved: int32(l.kinds[kindPreserved]), FullyLabeled: l.fullyLabeled, Ready: l.ready, Available: l.available,
		NextAvailable: next,
		Failed:        names(l.failed), Interrupted: names(l.interrupted), FailedSummaries: names(l.opFailed),
		AutoKept: names(l.autoKept), Waits: names(l.waits), Stale: names(l.stale),
	}
}

// randomSetMachine draws a Machine of the set in any state the set reads.
func randomSetMachine(rng *rand.Rand, name string, ms *v1alpha1.MachineSet, base time.Time) *v1alpha1.Machine {
	m := &v1alpha1.Machine{}
	m.Name = name
	m.Labels = map[string]string{}
	m.Annotations = map[string]string{}
	if rng.IntN(5) > 0 {
		m.Labels["tier"] = "web"
	}
	if rng.IntN(5) == 0 {
		m.Spec.NodeTemplate.Metadata.Labels = map[string]string{"old": "yes"}
	} else {
		m.Spec.NodeTemplate = *ms.Spec.Template.Spec.NodeTemplate.DeepCopy()
	}
	at := func() metav1.Time { return metav1.NewTime(base.Add(time.Duration(rng.IntN(121)-60) * time.Second)) }
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: at()})
	}
	if rng.IntN(7) == 0 {
		m.DeletionTimestamp = &metav1.Time{Time: base}
	}
	switch rng.IntN(8) {
	case 0:
		cond(v1alpha1.PreservedCondition, metav1.ConditionTrue, "Preserved", "")
	case 1:
		cond(v1alpha1.PreservedCondition, metav1.ConditionFalse, "Expired", "")
	case 2:
		m.Annotations[v1alpha1.PreserveAnnotation] = "now"
	}
	if rng.IntN(4) == 0 {
		m.Annotations[v1alpha1.AutoPreservedAnnotation] = "true"
	}
	if rng.IntN(6) == 0 {
		m.Status.FailureReason = "boom"
	}
	if rng.IntN(8) == 0 {
		m.Status.LastOperation.State = v1alpha1.OperationFailed
	}
	if rng.IntN(8) == 0 {
		cond(v1alpha1.InterruptedCondition, metav1.ConditionTrue, "SpotInterruption", "")
	}
	switch rng.IntN(3) {
	case 0:
		cond(v1alpha1.ReadyCondition, metav1.ConditionTrue, "Ready", "")
	case 1:
		cond(v1alpha1.ReadyCondition, metav1.ConditionFalse, "NotReady", "")
	}
	if rng.IntN(10) == 0 {
		m.Status.UnhealthySince = &metav1.Time{Time: base}
	}
	switch rng.IntN(6) {
	case 0:
		cond(v1alpha1.DisruptionAllowedCondition, metav1.ConditionFalse, disruption.ReasonWaitingForBudget, "ScaleDown waits for budget b")
	case 1:
		cond(v1alpha1.DisruptionAllowedCondition, metav1.ConditionFalse, disruption.ReasonWaitingForBudget, "Remediation waits for budget b")
	}
	return m
}

// The ledger counts, one Machine at a time, what reading every Machine
// setCounts: 20,000 random puts and removes of 40 Machines, with the clock
// moving on (and back, now and then), each followed by both counts, and
// its sums equal to its own recount.
func TestLedgerCountsWhatReadingEveryMachineCounted(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261203, 35))
	base := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, minReady := range []int32{0, 30} {
		ms := &v1alpha1.MachineSet{}
		ms.Name, ms.Namespace, ms.UID = "web", "default", "set-uid"
		ms.Spec.MinReadySeconds = minReady
		ms.Spec.Template.Metadata.Labels = map[string]string{"tier": "web"}
		ms.Spec.Template.Spec.NodeTemplate.Metadata.Labels = map[string]string{"new": "yes"}
		ms.Annotations = map[string]string{v1alpha1.InPlaceMovingOutAnnotation: "m-3,m-7, m-11"}
		sel, err := labels.Parse("tier=web")
		if err != nil {
			t.Fatal(err)
		}
		l := newLedger(ms, ledgerContext(ms, sel))
		machines := map[string]*v1alpha1.Machine{}
		now := base
		for step := range 10000 {
			name := fmt.Sprintf("m-%d", rng.IntN(40))
			if rng.IntN(5) == 0 {
				l.remove(name)
				delete(machines, name)
			} else {
				m := randomSetMachine(rng, name, ms, base)
				l.put(m)
				machines[name] = m
			}
			if rng.IntN(50) == 0 {
				now = now.Add(-time.Duration(rng.IntN(30)) * time.Second)
			} else {
				now = now.Add(time.Duration(rng.IntN(3)) * time.Second)
			}
			want, got := countEvery(machines, ms, now), countLedger(l, now)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("minReady %d, step %d: the ledger counts\n%+v\nreading every Machine counts\n%+v", minReady, step, got, want)
			}
			if d := l.differs(l.recounted(ms)); d != "" {
				t.Fatalf("minReady %d, step %d: the ledger differs from its recount: %s", minReady, step, d)
			}
		}
		if n := len(l.machines); n != len(machines) || n == 0 {
			t.Fatalf("the ledger holds %d Machines, the test %d", n, len(machines))
		}
	}
}

// A change of what a Machine's class depends on is a new context: the
// set classifies its Machines again. A change of replicas is not.
func TestLedgerContext(t *testing.T) {
	ms := &v1alpha1.MachineSet{}
	ms.UID = "u"
	ms.Spec.Template.Metadata.Labels = map[string]string{"tier": "web"}
	sel, _ := labels.Parse("tier=web")
	base := ledgerContext(ms, sel)
	same := ms.DeepCopy()
	same.Spec.Replicas = 7
	same.Generation = 9
	if ledgerContext(same, sel) != base {
		t.Error("a new spec.replicas changed the context")
	}
	for what, change := range map[string]func(*v1alpha1.MachineSet){
		"uid": func(o *v1alpha1.MachineSet) { o.UID = "v" },
		"template": func(o *v1alpha1.MachineSet) {
			o.Spec.Template.Spec.NodeTemplate.Metadata.Labels = map[string]string{"a": "b"}
		},
		"minReady": func(o *v1alpha1.MachineSet) { o.Spec.MinReadySeconds = 5 },
		"moving out": func(o *v1alpha1.MachineSet) {
			o.Annotations = map[string]string{v1alpha1.InPlaceMovingOutAnnotation: "m"}
		},
	} {
		o := ms.DeepCopy()
		change(o)
		if ledgerContext(o, sel) == base {
			t.Errorf("a change of the %s kept the context", what)
		}
	}
	other, _ := labels.Parse("tier=db")
	if ledgerContext(ms, other) == base || strings.Contains(base, "tier=db") {
		t.Error("a change of the selector kept the context")
	}
}

// What one Machine event costs the set's counts, with N Machines of a
// rolling update (Running, some on their way): the ledger's put and
// counts, against reading every Machine as the reconcile did before
// (countEvery).
func BenchmarkSetCountsAtAnEvent(b *testing.B) {
	base := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ms := &v1alpha1.MachineSet{}
	ms.UID = "set-uid"
	ms.Spec.Template.Metadata.Labels = map[string]string{"tier": "web"}
	sel, _ := labels.Parse("tier=web")
	// machine is Machine i, Ready unless it is one of every tenth on its
	// way, at event k.
	machine := func(i, k int) *v1alpha1.Machine {
		m := &v1alpha1.Machine{}
		m.Name = fmt.Sprintf("m-%d", i)
		m.Labels = map[string]string{"tier": "web"}
		if (i+k)%10 != 0 {
			m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(base)}}
		}
		return m
	}
	for _, n := range []int{1000, 5000} {
		l := newLedger(ms, ledgerContext(ms, sel))
		machines := map[string]*v1alpha1.Machine{}
		for i := range n {
			machines[machine(i, 0).Name] = machine(i, 0)
			l.put(machine(i, 0))
		}
		b.Run(fmt.Sprintf("ledger/N=%d", n), func(b *testing.B) {
			now := base
			for k := 0; b.Loop(); k++ {
				l.put(machine(k%n, k/n+1))
				now = now.Add(time.Millisecond)
				countLedger(l, now)
			}
		})
		b.Run(fmt.Sprintf("every-machine/N=%d", n), func(b *testing.B) {
			for k := 0; b.Loop(); k++ {
				m := machine(k%n, k/n+1)
				machines[m.Name] = m
				countEvery(machines, ms, base)
			}
		})
	}
}

// A change the reconcile made to a Machine counts until the reconcile
// ends; then the ledger holds the Machine as the cache showed it, until
// the change's own event arrives (putUntilEnd).
func TestAChangeCountsUntilTheReconcileEnds(t *testing.T) {
	ms := &v1alpha1.MachineSet{}
	ms.UID = "set-uid"
	sel, _ := labels.Parse("")
	l := newLedger(ms, ledgerContext(ms, sel))
	m := &v1alpha1.Machine{}
	m.Name = "a"
	l.put(m)
	s := &scope{ms: ms, ledger: l, owned: l.machines, replaced: map[string]*v1alpha1.Machine{}}
	deleting := m.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	s.putUntilEnd(deleting)
	adopted := &v1alpha1.Machine{}
	adopted.Name = "b"
	s.putUntilEnd(adopted)
	if l.kinds[kindAlive] != 1 || l.kinds[kindDeleting] != 1 {
		t.Fatalf("during the reconcile: alive %d, deleting %d; want 1 and 1", l.kinds[kindAlive], l.kinds[kindDeleting])
	}
	s.restore()
	if l.kinds[kindAlive] != 1 || l.kinds[kindDeleting] != 0 || l.machines["a"] != m || l.machines["b"] != nil {
		t.Fatalf("after the reconcile: alive %d, deleting %d, machines %v; want a as read, alone", l.kinds[kindAlive], l.kinds[kindDeleting], l.machines)
	}
}
