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
	// ReasonDisruptionGranted: every budget selecting the Machine granted
	// a disruption (Normal Event).
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
	if g == nil {
		return Decision{Allowed: true}, nil
	}
	budgets, err := g.matching(ctx, m)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Budgets: names(budgets)}
	if down, _ := machinefacts.Unavailable(m); down || len(budgets) == 0 {
		d.Allowed, d.AsUnavailable = true, down && len(budgets) > 0
		g.clearGranted(ctx, m)
		return d, nil
	}
	var need []*v1alpha1.MachineDisruptionBudget
	for _, b := range budgets {
		granted, why := check(b, m)
		if why != "" {
			d.Message = fmt.Sprintf("%s%s: %s", waitPrefix(kind), b.Name, why)
			return d, g.wait(ctx, m, d.Message)
		}
		if !granted {
			need = append(need, b)
		}
	}
	for i, b := range need {
		if err := g.grant(ctx, b, m, kind); err != nil {
			if rerr := g.release(ctx, need[:i], m.Name, kind); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return Decision{}, fmt.Errorf("recording the %s grant of Machine %s on MachineDisruptionBudget %s: %w", kind, m.Name, b.Name, err)
		}
		grants.WithLabelValues(b.Namespace, b.Name, string(kind)).Inc()
	}
	d.Allowed = true
	if len(need) > 0 {
		g.event(m, corev1.EventTypeNormal, ReasonDisruptionGranted,
			fmt.Sprintf("%s granted by MachineDisruptionBudget %s", kind, strings.Join(names(need), ", ")))
	}
	g.clearGranted(ctx, m)
	return d, nil
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
	if err := g.release(ctx, budgets, m.Name, ""); err != nil {
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
	if err := g.release(ctx, budgets, m.Name, kind); err != nil {
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

// matching lists the budgets of m's namespace selecting m, by name. A
// budget whose selector cannot be read matches everything: it holds the
// namespace's disruptions back until fixed, rather than let them through.
func (g *Gate) matching(ctx context.Context, m *v1alpha1.Machine) ([]*v1alpha1.MachineDisruptionBudget, error) {
	reader := g.Reader
	if reader == nil {
		reader = g.Client
	}
	list := &v1alpha1.MachineDisruptionBudgetList{}
	if err := reader.List(ctx, list, client.InNamespace(m.Namespace)); err != nil {
		return nil, fmt.Errorf("listing MachineDisruptionBudgets: %w", err)
	}
	var out []*v1alpha1.MachineDisruptionBudget
	for i := range list.Items {
		b := &list.Items[i]
		if !b.DeletionTimestamp.IsZero() {
			continue
		}
		if ok, err := Selects(b, m); ok || err != nil {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// grant records m's disruption on b under b's resourceVersion.
func (g *Gate) grant(ctx context.Context, b *v1alpha1.MachineDisruptionBudget, m *v1alpha1.Machine, kind v1alpha1.DisruptionKind) error {
	base := b.DeepCopy()
	b.Status.DisruptedMachines = append(b.Status.DisruptedMachines, v1alpha1.DisruptedMachine{
		Name: m.Name, Kind: kind, GrantedAt: metav1.NewTime(g.now()),
	})
	b.Status.DisruptionsAllowed--
	return g.Client.Status().Patch(ctx, b, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// release removes name's grants (of the kind; "" for every kind) from the
// budgets, each from a fresh read.
func (g *Gate) release(ctx context.Context, budgets []*v1alpha1.MachineDisruptionBudget, name string, kind v1alpha1.DisruptionKind) error {
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
				if d.Name != name || (kind != "" && d.Kind != kind) {
					kept = append(kept, d)
				}
			}
			if len(kept) == len(base.Status.DisruptedMachines) {
				return nil
			}
			cur.Status.DisruptedMachines = kept
			cur.Status.DisruptionsAllowed++
			return g.Client.Status().Patch(ctx, cur, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		})
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("releasing the grant of Machine %s on MachineDisruptionBudget %s: %w", name, b.Name, err))
		}
	}
	return errors.Join(errs...)
}

// wait records on m that its disruption waits, with an Event when it
// starts waiting or waits for another reason.
func (g *Gate) wait(ctx context.Context, m *v1alpha1.Machine, message string) error {
	waits.WithLabelValues(m.Namespace).Inc()
	prev := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	if prev != nil && prev.Status == metav1.ConditionFalse && prev.Message == message {
		return nil
	}
	if prev == nil || prev.Status != metav1.ConditionFalse {
		g.event(m, corev1.EventTypeWarning, ReasonWaitingForBudget, message)
	}
	return g.setCondition(ctx, m, &metav1.Condition{Type: v1alpha1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: ReasonWaitingForBudget, Message: message})
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
