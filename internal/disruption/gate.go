package disruption

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
)

// Reasons of a Machine's DisruptionAllowed condition and of the Gate's Events.
const (
	// ReasonWaitingForBudget: a voluntary disruption of the Machine waits
	// for a MachineDisruptionBudget (condition False, and a Warning Event).
	ReasonWaitingForBudget = "WaitingForDisruptionBudget"
	// ReasonDisruptionGranted: every budget selecting a Machine that
	// waited granted its disruption (Normal Event).
	ReasonDisruptionGranted = "DisruptionGranted"
)

// Gate is what a controller asks before it disrupts a Machine voluntarily.
// A nil *Gate grants everything (no budgets in play).
type Gate struct {
	// Client writes the budgets' status (the grants) and the Machine's
	// DisruptionAllowed condition.
	Client client.Client
	// Reader reads budgets; nil means Client. A cache is fine: a grant
	// computed from a stale budget is refused by its resourceVersion, and a
	// refusal only makes the caller ask again.
	Reader client.Reader
	// APIReader reads a Machine past the cache before its condition is
	// written (a manager's APIReader); nil means Client.
	APIReader client.Reader
	// Recorder emits Events on Machines; nil emits none.
	Recorder events.EventRecorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Decision is the Gate's answer for one Machine.
type Decision struct {
	// Allowed: the disruption may start now; it was recorded on every
	// budget selecting the Machine.
	Allowed bool
	// AsUnavailable: allowed without a grant because the Machine, as the
	// caller read it, is unavailable already. That holds for the version
	// read only: a Machine Ready again since (a Node back from NotReady, a
	// new Machine whose Node just joined) needs a grant. The caller
	// disrupts it on that version (a delete with the resourceVersion as a
	// precondition) or asks again.
	AsUnavailable bool
	// Budgets are the budgets selecting the Machine, by name.
	Budgets []string
	// Message says, when not Allowed, which budget holds the Machine back
	// and why (the Machine's DisruptionAllowed condition).
	Message string
}

// Request asks every budget selecting m for a disruption of the kind, and
// records the grant in each before answering Allowed (docs/disruption-budgets.md):
//
//   - no budget selects m: Allowed, nothing written;
//   - m is already unavailable (Unavailable): Allowed, nothing written — it
//     counts in its budgets already, and failures are never held back;
//   - every budget selecting m has a disruption left (status, recounted
//     for its current generation): the grant is added to each budget's
//     status.disruptedMachines and its disruptionsAllowed lowered, in one
//     patch per budget carrying the resourceVersion read; Allowed;
//   - otherwise: not Allowed, and m's DisruptionAllowed condition says
//     which budget holds it (an Event when it starts waiting).
//
// A Conflict error means a budget changed between read and write (another
// controller took a disruption, or the budget controller recounted): the
// grants already made by this call are released and the caller asks again
// (requeue). A Machine granted before and asking again is Allowed without
// a second grant.
func (g *Gate) Request(ctx context.Context, m *v1alpha1.Machine, kind v1alpha1.DisruptionKind) (Decision, error) {
	ds, err := g.RequestAll(ctx, []Ask{{Machine: m, Kind: kind}})
	if err != nil {
		return Decision{}, err
	}
	return ds[0], nil
}

// Ask is one disruption asked of the Gate: a Machine and its kind.
type Ask struct {
	Machine *v1alpha1.Machine
	Kind    v1alpha1.DisruptionKind
}

// RequestAll asks for the disruptions in order, each as Request asks for
// one, and answers for each up to the first one held back (its Decision
// is the last): the ones after it would be held back too, and asking for
// them would only mark each one waiting. The grants are counted against
// the budgets as read once, each taking one disruption left, and written
// in one patch per budget: a set deleting a hundred victims writes each
// budget once, not a hundred times, and does not read the budget again
// from a cache that has not seen its own last grant (a Conflict at every
// victim after the first, docs/benchmarks.md). An error writing a grant
// (a Conflict: a budget changed since read) comes without Decisions and
// grants none of them: what was written to other budgets is released. An
// error marking the held back Machine waiting comes with the Decisions:
// the grants stand.
func (g *Gate) RequestAll(ctx context.Context, asks []Ask) ([]Decision, error) {
	if g == nil {
		ds := make([]Decision, len(asks))
		for i := range ds {
			ds[i].Allowed = true
		}
		return ds, nil
	}
	var (
		out     []Decision
		held    *Ask
		budgets = map[string][]*v1alpha1.MachineDisruptionBudget{} // by namespace
		w       grantWrite
	)
	for i := range asks {
		a := &asks[i]
		all, ok := budgets[a.Machine.Namespace]
		if !ok {
			var err error
			if all, err = g.list(ctx, a.Machine.Namespace); err != nil {
				return nil, err
			}
			budgets[a.Machine.Namespace] = all
		}
		d, need := decide(selecting(all, a.Machine), a)
		out = append(out, d)
		if !d.Allowed {
			held = a
			break
		}
		w.add(need, a, g.now())
	}
	if err := w.write(ctx, g); err != nil {
		return nil, err
	}
	for i, d := range out {
		a := &asks[i]
		if !d.Allowed {
			continue
		}
		need := w.granted[a.Machine.Name]
		for _, b := range need {
			grants.WithLabelValues(b.Namespace, b.Name, string(a.Kind)).Inc()
		}
		// The Event ends a wait the Machine's Warning Event began. A grant
		// without a wait is told by the deletion or the update itself (and
		// the metric): an Event for each was one more API write per
		// replaced Machine (docs/benchmarks.md).
		if len(need) > 0 && waited(a.Machine) {
			g.event(a.Machine, corev1.EventTypeNormal, ReasonDisruptionGranted,
				fmt.Sprintf("%s granted by MachineDisruptionBudget %s", a.Kind, strings.Join(names(need), ", ")))
		}
		g.clearGranted(ctx, a.Machine)
	}
	if held != nil {
		return out, g.wait(ctx, held.Machine, out[len(out)-1].Message)
	}
	return out, nil
}

// decide is the answer for a among the budgets selecting it, as they
// stand with the grants of this call so far, and the budgets that are
// to record a's grant (none for a Machine granted before, or let
// through as unavailable).
func decide(budgets []*v1alpha1.MachineDisruptionBudget, a *Ask) (Decision, []*v1alpha1.MachineDisruptionBudget) {
	d := Decision{Budgets: names(budgets)}
	if down, _ := machinefacts.Unavailable(a.Machine); down || len(budgets) == 0 {
		d.Allowed, d.AsUnavailable = true, down && len(budgets) > 0
		return d, nil
	}
	var need []*v1alpha1.MachineDisruptionBudget
	for _, b := range budgets {
		granted, why := check(b, a.Machine)
		if why != "" {
			d.Message = fmt.Sprintf("%s%s: %s", waitPrefix(a.Kind), b.Name, why)
			return d, nil
		}
		if !granted {
			need = append(need, b)
		}
	}
	d.Allowed = true
	return d, need
}

// Release withdraws m's grants (a caller that asked, was granted, and then
// decided not to disrupt m) and its waiting condition (a caller that no
// longer wants the disruption it waited for).
func (g *Gate) Release(ctx context.Context, m *v1alpha1.Machine) error {
	if g == nil {
		return nil
	}
	budgets, err := g.matching(ctx, m)
	if err != nil {
		return err
	}
	if err := g.release(ctx, budgets, func(d v1alpha1.DisruptedMachine) bool { return d.Name == m.Name }); err != nil {
		return err
	}
	return g.clearWaiting(ctx, m)
}

// Withdraw withdraws m's requests of one kind only: its grants of that kind,
// and its waiting condition when it waits for a disruption of that kind. A
// controller that no longer wants the disruption it asked for (a health
// check whose Machine recovered, or whose remediation is held back for
// another reason) calls it without touching what other controllers asked
// for the same Machine (a rollout's grant, a scale-down's wait).
func (g *Gate) Withdraw(ctx context.Context, m *v1alpha1.Machine, kind v1alpha1.DisruptionKind) error {
	if g == nil {
		return nil
	}
	budgets, err := g.matching(ctx, m)
	if err != nil {
		return err
	}
	if err := g.release(ctx, budgets, func(d v1alpha1.DisruptedMachine) bool { return d.Name == m.Name && d.Kind == kind }); err != nil {
		return err
	}
	if !WaitsFor(m, kind) {
		return nil
	}
	return g.setCondition(ctx, m, nil)
}

// WaitsFor reports whether m's DisruptionAllowed condition says a
// disruption of the kind waits for a budget.
func WaitsFor(m *v1alpha1.Machine, kind v1alpha1.DisruptionKind) bool {
	k, ok := Waiting(m)
	return ok && k == kind
}

// waitPrefix begins the message of a disruption of the kind held back,
// which names the budget next: Waiting reads the kind back from it.
func waitPrefix(kind v1alpha1.DisruptionKind) string {
	return string(kind) + " waits for MachineDisruptionBudget "
}

// check says whether b granted m already, or why b holds m back ("" when
// it has a disruption left).
func check(b *v1alpha1.MachineDisruptionBudget, m *v1alpha1.Machine) (granted bool, why string) {
	for _, d := range b.Status.DisruptedMachines {
		if d.Name == m.Name {
			return true, ""
		}
	}
	st := &b.Status
	switch {
	case st.ObservedGeneration != b.Generation:
		return false, "the budget changed and is not recounted yet"
	case st.DisruptionsAllowed <= 0:
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.DisruptionAllowedCondition); c != nil && c.Reason != ReasonBudgetExhausted && c.Message != "" {
			return false, c.Message
		}
		return false, fmt.Sprintf("%d of %d selected Machines are unavailable, maxUnavailable %s (%d): no disruption allowed now",
			st.CurrentUnavailable, st.ExpectedMachines, b.Spec.MaxUnavailable.String(), st.MaxUnavailable)
	}
	return false, ""
}

// matching lists the budgets of m's namespace selecting m, by name.
func (g *Gate) matching(ctx context.Context, m *v1alpha1.Machine) ([]*v1alpha1.MachineDisruptionBudget, error) {
	all, err := g.list(ctx, m.Namespace)
	if err != nil {
		return nil, err
	}
	return selecting(all, m), nil
}

// list reads the budgets of a namespace not being deleted, by name, as
// copies the caller may change.
func (g *Gate) list(ctx context.Context, namespace string) ([]*v1alpha1.MachineDisruptionBudget, error) {
	reader := g.Reader
	if reader == nil {
		reader = g.Client
	}
	list := &v1alpha1.MachineDisruptionBudgetList{}
	if err := reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing MachineDisruptionBudgets: %w", err)
	}
	var out []*v1alpha1.MachineDisruptionBudget
	for i := range list.Items {
		if b := &list.Items[i]; b.DeletionTimestamp.IsZero() {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// selecting are the budgets of all selecting m. A budget whose selector
// cannot be read selects everything: it holds the namespace's
// disruptions back until fixed, rather than let them through.
func selecting(all []*v1alpha1.MachineDisruptionBudget, m *v1alpha1.Machine) []*v1alpha1.MachineDisruptionBudget {
	var out []*v1alpha1.MachineDisruptionBudget
	for _, b := range all {
		if ok, err := Selects(b, m); ok || err != nil {
			out = append(out, b)
		}
	}
	return out
}

// release removes the grants drop picks from the budgets, each from a
// fresh read.
func (g *Gate) release(ctx context.Context, budgets []*v1alpha1.MachineDisruptionBudget, drop func(v1alpha1.DisruptedMachine) bool) error {
	var errs []error
	for _, b := range budgets {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &v1alpha1.MachineDisruptionBudget{}
			if err := g.Client.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
				return err
			}
			base := cur.DeepCopy()
			kept := cur.Status.DisruptedMachines[:0]
			for _, d := range cur.Status.DisruptedMachines {
				if !drop(d) {
					kept = append(kept, d)
				}
			}
			dropped := len(base.Status.DisruptedMachines) - len(kept)
			if dropped == 0 {
				return nil
			}
			cur.Status.DisruptedMachines = kept
			cur.Status.DisruptionsAllowed += int32(dropped)
			return g.Client.Status().Patch(ctx, cur, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		})
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("releasing grants on MachineDisruptionBudget %s: %w", b.Name, err))
		}
	}
	return errors.Join(errs...)
}

// wait records on m that its disruption waits, with an Event when it
// starts waiting or waits for another reason.
func (g *Gate) wait(ctx context.Context, m *v1alpha1.Machine, message string) error {
	waits.WithLabelValues(m.Namespace).Inc()
	prev := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	if waited(m) && prev.Message == message {
		return nil
	}
	if !waited(m) {
		g.event(m, corev1.EventTypeWarning, ReasonWaitingForBudget, message)
	}
	return g.setCondition(ctx, m, &metav1.Condition{Type: v1alpha1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: ReasonWaitingForBudget, Message: message})
}

// waited reports whether m's DisruptionAllowed condition says it waits.
func waited(m *v1alpha1.Machine) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	return c != nil && c.Status == metav1.ConditionFalse
}

// clearWaiting removes m's DisruptionAllowed condition, if it has one.
func (g *Gate) clearWaiting(ctx context.Context, m *v1alpha1.Machine) error {
	if meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition) == nil {
		return nil
	}
	return g.setCondition(ctx, m, nil)
}

// clearGranted clears the waiting condition of a Machine just granted. A
// failure is logged, not returned: the grant stands, and the caller is to
// act on it; the budget controller lists no Machine being deleted as
// waiting, and the next request clears it again.
func (g *Gate) clearGranted(ctx context.Context, m *v1alpha1.Machine) {
	if err := g.clearWaiting(ctx, m); err != nil {
		log.FromContext(ctx).Info("clearing the DisruptionAllowed condition of a granted Machine", "machine", m.Name, "error", err.Error())
	}
}

// setCondition writes (or, with nil, removes) m's DisruptionAllowed
// condition alone, over the Machine's latest conditions: the machine
// controller owns the others. m itself is left as the caller read it.
func (g *Gate) setCondition(ctx context.Context, m *v1alpha1.Machine, c *metav1.Condition) error {
	mc := m.DeepCopy()
	w := patch.New(g.Client, mc, patch.WithOwnedConditions(v1alpha1.DisruptionAllowedCondition), patch.WithReader(g.APIReader))
	if c == nil {
		meta.RemoveStatusCondition(&mc.Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	} else {
		c.ObservedGeneration = mc.Generation
		c.LastTransitionTime = metav1.NewTime(g.now())
		meta.SetStatusCondition(&mc.Status.Conditions, *c)
	}
	if err := w.PatchStatus(ctx, mc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the DisruptionAllowed condition of Machine %s: %w", m.Name, err)
	}
	return nil
}

func (g *Gate) event(m *v1alpha1.Machine, eventType, reason, message string) {
	if g.Recorder != nil {
		g.Recorder.Eventf(m, nil, eventType, reason, "Disrupt", "%s", message)
	}
}

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func names(budgets []*v1alpha1.MachineDisruptionBudget) []string {
	out := make([]string, len(budgets))
	for i, b := range budgets {
		out[i] = b.Name
	}
	return out
}
