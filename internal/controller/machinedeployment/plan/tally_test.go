package plan

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestTallyIsCount changes random Machines one at a time, as a set's
// Machine events do, and after each change asks the Tally and Count the
// same question: the answers must be equal, whatever minReady, clock
// (forward, or now and then back) and supersededAt.
func TestTallyIsCount(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		tally := NewTally()
		machines := map[types.UID]*v1alpha1.Machine{}
		now := base
		minReady := time.Duration(rng.IntN(3)) * 10 * time.Second
		var superseded time.Time
		for step := 0; step < 400; step++ {
			switch r := rng.IntN(10); {
			case r < 5 || len(machines) == 0:
				uid := types.UID(fmt.Sprint(rng.IntN(60)))
				m := randomMachine(rng, uid, base, now)
				machines[uid] = m
				tally.Set(m)
			case r < 7:
				for uid := range machines {
					delete(machines, uid)
					tally.Forget(uid)
					break
				}
			case r < 8:
				minReady = time.Duration(rng.IntN(3)) * 10 * time.Second
			case r < 9:
				superseded = []time.Time{{}, base.Add(time.Duration(rng.IntN(60)) * time.Second)}[rng.IntN(2)]
			default:
				now = now.Add(-time.Duration(rng.IntN(20)) * time.Second)
			}
			now = now.Add(time.Duration(rng.IntN(4)) * time.Second)
			list := make([]*v1alpha1.Machine, 0, len(machines))
			for _, m := range machines {
				list = append(list, m)
			}
			want, wantNext := Count(list, minReady, now, superseded)
			got, gotNext := tally.Counts(minReady, now, superseded)
			if got != want || gotNext != wantNext {
				t.Fatalf("seed %d step %d: Tally %+v next %v; Count %+v next %v", seed, step, got, gotNext, want, wantNext)
			}
			if tally.Len() != len(machines) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, tally.Len(), len(machines))
			}
		}
	}
}

// TestTallyShrinksAsItsSetDoes empties a Tally of 2000 Machines one at a
// time, as a rollout empties its old set, asking Tally and Count the same
// question after each: the copies its map gets on the way (a quarter of
// the most it held) keep every Machine.
func TestTallyShrinksAsItsSetDoes(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 7))
	tally := NewTally()
	machines := map[types.UID]*v1alpha1.Machine{}
	for i := range 2000 {
		uid := types.UID(fmt.Sprint(i))
		machines[uid] = randomMachine(rng, uid, base, base.Add(time.Minute))
		tally.Set(machines[uid])
	}
	now, minReady := base.Add(time.Minute), 20*time.Second
	copies := 0
	for uid := range machines {
		most := tally.most
		delete(machines, uid)
		tally.Forget(uid)
		if tally.most < most {
			copies++
		}
		list := make([]*v1alpha1.Machine, 0, len(machines))
		for _, m := range machines {
			list = append(list, m)
		}
		want, wantNext := Count(list, minReady, now, base.Add(30*time.Second))
		got, gotNext := tally.Counts(minReady, now, base.Add(30*time.Second))
		if got != want || gotNext != wantNext || tally.Len() != len(machines) {
			t.Fatalf("%d left: Tally %+v next %v, Len %d; Count %+v next %v", len(machines), got, gotNext, tally.Len(), want, wantNext)
		}
		now = now.Add(100 * time.Millisecond)
	}
	if copies != 2 { // at 500 of 2000, and at 125 of 500; then below shrinkFrom
		t.Errorf("the map was copied %d times, want 2", copies)
	}
}

// BenchmarkTallyHeap reports the heap a Tally of 5000 Running Machines
// holds per Machine, and what it holds once all but 100 are gone.
func BenchmarkTallyHeap(b *testing.B) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	machines := make([]*v1alpha1.Machine, 5000)
	for i := range machines {
		m := &v1alpha1.Machine{}
		m.UID = types.UID(fmt.Sprintf("6c8e2539-b33e-4e50-89b8-%012d", i)) // as long as a real UID
		m.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
		m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		machines[i] = m
	}
	var full, drained float64
	for b.Loop() {
		before := heapInUse()
		tally := NewTally()
		for _, m := range machines {
			tally.Set(m)
		}
		tally.Counts(0, now, time.Time{}) // as the deployment's reconcile asks: none left pending
		full += float64(heapInUse()-before) / float64(len(machines))
		for _, m := range machines[100:] {
			tally.Forget(m.UID)
		}
		drained += float64(heapInUse()-before) / 1024
		runtime.KeepAlive(tally)
	}
	b.ReportMetric(full/float64(b.N), "B/machine")
	b.ReportMetric(drained/float64(b.N), "KiB-at-100-left")
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapAlloc
}

// randomMachine is a Machine in any of the states Count tells apart.
func randomMachine(rng *rand.Rand, uid types.UID, base, now time.Time) *v1alpha1.Machine {
	m := &v1alpha1.Machine{}
	m.UID = uid
	m.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(rng.IntN(90)) * time.Second))
	m.Annotations = map[string]string{}
	if rng.IntN(8) == 0 {
		m.DeletionTimestamp = &metav1.Time{Time: now}
	}
	if rng.IntN(8) == 0 {
		m.Annotations[v1alpha1.PreserveAnnotation] = v1alpha1.PreserveNow
	}
	if rng.IntN(8) == 0 {
		m.Status.FailureReason = "broken"
	}
	switch rng.IntN(4) {
	case 0:
		m.Annotations[v1alpha1.DeleteMachineAnnotation] = ""
	case 1:
		m.Annotations[v1alpha1.PriorityAnnotation] = fmt.Sprint(rng.IntN(5))
	}
	if rng.IntN(3) > 0 {
		since := metav1.NewTime(now.Add(-time.Duration(rng.IntN(40)) * time.Second))
		if rng.IntN(20) == 0 {
			since = metav1.Time{} // the zero time: Ready since long ago
		}
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
			LastTransitionTime: since})
	}
	if rng.IntN(10) == 0 {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: v1alpha1.InterruptedCondition, Status: metav1.ConditionTrue})
	}
	return m
}

// BenchmarkTallyCounts asks a Tally of 5000 Running Machines for its
// counts after one Machine changed: what the deployment's reconcile does
// at a Machine event, against BenchmarkCount's full count.
func BenchmarkTallyCounts(b *testing.B) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tally := NewTally()
	var last *v1alpha1.Machine
	for i := range 5000 {
		m := &v1alpha1.Machine{}
		m.UID = types.UID(fmt.Sprint(i))
		m.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
		m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		tally.Set(m)
		last = m
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		m := last.DeepCopy()
		m.Status.Conditions[0].Status = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse}[i%2]
		tally.Set(m)
		if c, _ := tally.Counts(0, now, time.Time{}); c.Machines != 5000 {
			b.Fatal(c)
		}
	}
}
