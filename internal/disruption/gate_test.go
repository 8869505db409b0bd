package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
)

func gate() *disruption.Gate { return &disruption.Gate{Client: env.Client} }

// TestGrantIsRecordedOnTheBudget: a grant is on the budget's status before
// the caller hears Allowed; asking again is not a second grant; the next
// Machine waits, told which budget holds it, on its condition.
func TestGrantIsRecordedOnTheBudget(t *testing.T) {
	ns := namespace(t)
	budgetOf(t, ns, "prod", "a", 2, 1)
	m1, m2 := machine(t, ns, "m1", "a", true), machine(t, ns, "m2", "a", true)
	recorder := events.NewFakeRecorder(10)
	gate := func() *disruption.Gate { return &disruption.Gate{Client: env.Client, Recorder: recorder} }

	d, err := gate().Request(ctx, m1, v1alpha1.DisruptionRollout)
	if err != nil || !d.Allowed {
		t.Fatalf("m1: %+v, %v; want Allowed", d, err)
	}
	b := getBudget(t, ns, "prod")
	if got := grantNames(b); !slices.Equal(got, []string{"m1"}) || b.Status.DisruptionsAllowed != 0 {
		t.Fatalf("budget after the grant: grants %v, allowed %d; want [m1], 0", got, b.Status.DisruptionsAllowed)
	}
	if k := b.Status.DisruptedMachines[0].Kind; k != v1alpha1.DisruptionRollout {
		t.Errorf("grant kind %s, want Rollout", k)
	}

	if d, err := gate().Request(ctx, m1, v1alpha1.DisruptionRollout); err != nil || !d.Allowed {
		t.Fatalf("m1 again: %+v, %v; want Allowed", d, err)
	}
	if got := grantNames(getBudget(t, ns, "prod")); len(got) != 1 {
		t.Fatalf("asking again granted again: %v", got)
	}

	d, err = gate().Request(ctx, m2, v1alpha1.DisruptionInPlaceUpdate)
	if err != nil || d.Allowed {
		t.Fatalf("m2: %+v, %v; want waiting", d, err)
	}
	if !strings.Contains(d.Message, "MachineDisruptionBudget prod") || !strings.Contains(d.Message, "InPlaceUpdate waits") {
		t.Errorf("message %q does not say which budget holds which disruption", d.Message)
	}
	c := meta.FindStatusCondition(getMachine(t, m2).Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	if c == nil || c.Status != "False" || c.Reason != disruption.ReasonWaitingForBudget || c.Message != d.Message {
		t.Errorf("m2's condition %+v, want DisruptionAllowed False %s %q", c, disruption.ReasonWaitingForBudget, d.Message)
	}
	if got := grantNames(getBudget(t, ns, "prod")); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("grants %v after a refusal, want [m1]", got)
	}

	// m1's disruption is given back: m2 takes it, and stops waiting.
	if err := gate().Release(ctx, m1); err != nil {
		t.Fatal(err)
	}
	d, err = gate().Request(ctx, getMachine(t, m2), v1alpha1.DisruptionInPlaceUpdate)
	if err != nil || !d.Allowed {
		t.Fatalf("m2 after m1's release: %+v, %v; want Allowed", d, err)
	}
	if got := grantNames(getBudget(t, ns, "prod")); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("grants %v, want [m2]", got)
	}
	if c := meta.FindStatusCondition(getMachine(t, m2).Status.Conditions, v1alpha1.DisruptionAllowedCondition); c != nil {
		t.Errorf("granted m2 still has %+v", c)
	}
	// Events: m2's wait, and its end; m1's grant, without a wait, has none.
	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, e)
	}
	want := []string{"Warning " + disruption.ReasonWaitingForBudget, "Normal " + disruption.ReasonDisruptionGranted}
	if len(got) != len(want) || !strings.HasPrefix(got[0], want[0]) || !strings.HasPrefix(got[1], want[1]) {
		t.Errorf("Events %q, want the reasons %q", got, want)
	}
}

// listBarrier holds the first List of budgets until every caller has
// listed: all of them then decide from the same budget resourceVersion,
// the race the grants' optimistic lock must settle.
type listBarrier struct {
	client.Reader
	listed *sync.WaitGroup
	once   sync.Once
}

func (l *listBarrier) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := l.Reader.List(ctx, list, opts...)
	l.once.Do(func() { l.listed.Done(); l.listed.Wait() })
	return err
}

// TestConcurrentRequestsTakeTheLastDisruptionOnce: eight controllers ask
// at the same moment, each for its own Machine, all having read the budget
// with one disruption left: exactly one is granted, and the budget records
// exactly one grant.
func TestConcurrentRequestsTakeTheLastDisruptionOnce(t *testing.T) {
	ns := namespace(t)
	budgetOf(t, ns, "prod", "a", 1, 1)
	const n = 8
	var machines []*v1alpha1.Machine
	for i := range n {
		machines = append(machines, machine(t, ns, fmt.Sprintf("m%d", i), "a", true))
	}
	var listed sync.WaitGroup
	listed.Add(n)
	var allowed, waited sync.Map
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reader := &listBarrier{Reader: env.Client, listed: &listed}
			g := &disruption.Gate{Client: env.Client, Reader: reader}
			m := machines[i]
			for {
				d, err := g.Request(ctx, m, v1alpha1.DisruptionRollout)
				if apierrors.IsConflict(err) {
					continue // another controller took the budget meanwhile: ask again
				}
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Store(m.Name, true)
				} else {
					waited.Store(m.Name, d.Message)
				}
				return
			}
		}()
	}
	wg.Wait()
	var granted []string
	allowed.Range(func(k, _ any) bool { granted = append(granted, k.(string)); return true })
	b := getBudget(t, ns, "prod")
	t.Logf("granted %v; budget grants %v, allowed %d", granted, grantNames(b), b.Status.DisruptionsAllowed)
	if len(granted) != 1 {
		t.Fatalf("%d controllers were granted the last disruption (%v), want 1", len(granted), granted)
	}
	if got := grantNames(b); !slices.Equal(got, granted) || b.Status.DisruptionsAllowed != 0 {
		t.Fatalf("budget grants %v, allowed %d; want %v, 0", got, b.Status.DisruptionsAllowed, granted)
	}
}

// TestWithdrawTouchesOnlyItsKind: a health check withdrawing its
// Remediation request leaves a rollout's grant and an in-place update's
// wait alone, and removes its own.
func TestWithdrawTouchesOnlyItsKind(t *testing.T) {
	ns := namespace(t)
	budgetOf(t, ns, "prod", "a", 1, 1)
	m1, m2 := machine(t, ns, "m1", "a", true), machine(t, ns, "m2", "a", true)
	if d, err := gate().Request(ctx, m1, v1alpha1.DisruptionRollout); err != nil || !d.Allowed {
		t.Fatalf("m1: %+v, %v; want Allowed", d, err)
	}
	if d, err := gate().Request(ctx, m2, v1alpha1.DisruptionInPlaceUpdate); err != nil || d.Allowed {
		t.Fatalf("m2: %+v, %v; want waiting", d, err)
	}
	for _, m := range []*v1alpha1.Machine{m1, m2} {
		if err := gate().Withdraw(ctx, getMachine(t, m), v1alpha1.DisruptionRemediation); err != nil {
			t.Fatal(err)
		}
	}
	if got := grantNames(getBudget(t, ns, "prod")); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("grants %v after withdrawing remediations, want the rollout's [m1]", got)
	}
	if c := meta.FindStatusCondition(getMachine(t, m2).Status.Conditions, v1alpha1.DisruptionAllowedCondition); c == nil {
		t.Error("withdrawing a remediation removed the in-place update's wait")
	}
	if err := gate().Withdraw(ctx, getMachine(t, m2), v1alpha1.DisruptionInPlaceUpdate); err != nil {
		t.Fatal(err)
	}
	if err := gate().Withdraw(ctx, getMachine(t, m1), v1alpha1.DisruptionRollout); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(getMachine(t, m2).Status.Conditions, v1alpha1.DisruptionAllowedCondition); c != nil {
		t.Errorf("m2 still waits after its own kind was withdrawn: %+v", c)
	}
	if got := grantNames(getBudget(t, ns, "prod")); len(got) != 0 {
		t.Errorf("grants %v after the rollout's was withdrawn, want none", got)
	}
}

// countPatches counts the status patches of budgets through it.
type countPatches struct {
	client.Client
	n *atomic.Int32
}

type countStatus struct {
	client.SubResourceWriter
	n *atomic.Int32
}

func (c countPatches) Status() client.SubResourceWriter { return countStatus{c.Client.Status(), c.n} }

func (s countStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	if _, ok := obj.(*v1alpha1.MachineDisruptionBudget); ok {
		s.n.Add(1)
	}
	return s.SubResourceWriter.Patch(ctx, obj, p, opts...)
}

// TestRequestAllWritesEachBudgetOnce: a set's victims asked at once take
// the budget's disruptions left in order, each kind recorded, in one
// status patch of the budget; the first held back is the last answered
// and the only one marked waiting.
func TestRequestAllWritesEachBudgetOnce(t *testing.T) {
	ns := namespace(t)
	budgetOf(t, ns, "prod", "a", 4, 3)
	asks := []disruption.Ask{{Machine: machine(t, ns, "down", "a", false), Kind: v1alpha1.DisruptionRollout}}
	for i := range 5 {
		kind := v1alpha1.DisruptionRollout
		if i == 1 {
			kind = v1alpha1.DisruptionPreservationEnd
		}
		asks = append(asks, disruption.Ask{Machine: machine(t, ns, fmt.Sprintf("m%d", i), "a", true), Kind: kind})
	}
	var patches atomic.Int32
	g := &disruption.Gate{Client: countPatches{env.Client, &patches}}
	ds, err := g.RequestAll(ctx, asks)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, d := range ds {
		got = append(got, fmt.Sprintf("%s:%v", asks[i].Machine.Name, d.Allowed))
	}
	if want := "[down:true m0:true m1:true m2:true m3:false]"; fmt.Sprint(got) != want {
		t.Fatalf("decisions %v, want %s", got, want)
	}
	if !ds[0].AsUnavailable || ds[1].AsUnavailable {
		t.Errorf("AsUnavailable: down %v, m0 %v; want true, false", ds[0].AsUnavailable, ds[1].AsUnavailable)
	}
	b := getBudget(t, ns, "prod")
	var grants []string
	for _, d := range b.Status.DisruptedMachines {
		grants = append(grants, d.Name+":"+string(d.Kind))
	}
	if want := "[m0:Rollout m1:PreservationEnd m2:Rollout]"; fmt.Sprint(grants) != want || b.Status.DisruptionsAllowed != 0 {
		t.Errorf("budget grants %v, allowed %d; want %s, 0", grants, b.Status.DisruptionsAllowed, want)
	}
	if n := patches.Load(); n != 1 {
		t.Errorf("%d status patches of the budget, want 1", n)
	}
	for _, a := range asks[1:] {
		c := meta.FindStatusCondition(getMachine(t, a.Machine).Status.Conditions, v1alpha1.DisruptionAllowedCondition)
		if waiting := c != nil; waiting != (a.Machine.Name == "m3") {
			t.Errorf("%s: condition %+v; only m3 should be marked waiting", a.Machine.Name, c)
		}
	}
}
