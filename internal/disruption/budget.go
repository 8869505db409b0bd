package disruption

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// GrantTTL is how long a grant counts as unavailable before its Machine is
// seen unavailable. The callers act right after the grant (delete, mark,
// start draining), so only a caller that stopped in between leaves a grant
// that long; it lapses then, as a PodDisruptionBudget's disruptedPods
// entries do.
const GrantTTL = 2 * time.Minute

// Selects reports whether the budget selects the Machine; an error means a
// selector written around admission.
func Selects(b *v1alpha1.MachineDisruptionBudget, m *v1alpha1.Machine) (bool, error) {
	if b.Namespace != m.Namespace {
		return false, nil
	}
	sel, err := selector(b)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(m.Labels)), nil
}

// Overlapping names, sorted, the budgets of others (b itself among them
// or not) that select a Machine b selects: each must allow that Machine's
// disruption too. Each selector is parsed once; a budget whose selector
// does not parse selects nothing here (Evaluate says why).
func Overlapping(b *v1alpha1.MachineDisruptionBudget, others []v1alpha1.MachineDisruptionBudget, machines []*v1alpha1.Machine) []string {
	own, err := selector(b)
	if err != nil {
		return nil
	}
	type other struct {
		name string
		sel  labels.Selector
	}
	var candidates []other
	for i := range others {
		o := &others[i]
		if o.Name == b.Name || o.Namespace != b.Namespace {
			continue
		}
		if sel, err := selector(o); err == nil {
			candidates = append(candidates, other{o.Name, sel})
		}
	}
	found := map[string]bool{}
	for _, m := range machines {
		if len(found) == len(candidates) {
			break // every other budget found: no Machine can add one
		}
		set := labels.Set(m.Labels)
		if m.Namespace != b.Namespace || !own.Matches(set) {
			continue
		}
		for _, c := range candidates {
			if !found[c.name] && c.sel.Matches(set) {
				found[c.name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(found))
}

func selector(b *v1alpha1.MachineDisruptionBudget) (labels.Selector, error) {
	sel, err := b.Spec.Selector.AsSelector()
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if sel.Empty() {
		// Admission refuses it; a budget over the whole namespace by
		// accident must not freeze every Machine.
		return nil, fmt.Errorf("spec.selector is empty")
	}
	return sel, nil
}

// Evaluation is a budget's state computed from its Machines.
type Evaluation struct {
	// Expected is how many selected Machines there should be: the
	// spec.replicas of each owner whose Machines the budget selects
	// wholly, plus every other selected Machine not being deleted.
	Expected int32
	// Max is spec.maxUnavailable resolved against Expected (rounded up).
	Max int32
	// Unavailable is how many of the expected Machines are unavailable,
	// missing or granted a disruption not yet seen taking effect.
	Unavailable int32
	// Allowed is how many more voluntary disruptions may be granted.
	Allowed int32
	// Disrupted are the grants still pending, oldest first.
	Disrupted []v1alpha1.DisruptedMachine
	// Waiting are the selected Machines waiting for a budget, by name.
	Waiting []v1alpha1.WaitingMachine
	// Why names, by Machine or owner, what is unavailable and why (for people).
	Why map[string]string
}

// Owners tells Evaluate which controller keeps a Machine and at what
// size: key names its top owner (for example "MachineDeployment/web"),
// replicas is that owner's spec.replicas. ok is false for a Machine no
// MachineSet keeps. A nil Owners counts every Machine alone.
type Owners func(m *v1alpha1.Machine) (key string, replicas int32, ok bool)

// Evaluate computes a budget's state from the Machines of its namespace:
// which it selects, which are unavailable, which of its grants are still
// pending (a grant ends when its Machine shows the effect of its kind
// (tookEffect) or is gone, or after GrantTTL), and so how many more
// disruptions it may grant.
//
// Machines of an owner the budget selects wholly count against the
// owner's size, as a PodDisruptionBudget counts against its controller's
// scale (see ownerGroup.unavailable): a Machine that failed to be created
// counts as unavailable, and a Machine being replaced and its replacement
// not yet Ready count once. The other selected Machines count alone.
func Evaluate(b *v1alpha1.MachineDisruptionBudget, machines []*v1alpha1.Machine, owners Owners, now time.Time) (Evaluation, error) {
	sel, err := selector(b)
	if err != nil {
		return Evaluation{}, err
	}
	ev := Evaluation{Why: map[string]string{}}
	selected := map[string]*v1alpha1.Machine{}
	for _, m := range machines {
		if m.Namespace != b.Namespace || !sel.Matches(labels.Set(m.Labels)) || !counted(m) {
			continue
		}
		selected[m.Name] = m
		if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition); c != nil &&
			c.Status == "False" && m.DeletionTimestamp.IsZero() {
			ev.Waiting = append(ev.Waiting, v1alpha1.WaitingMachine{Name: m.Name, Message: brief.Truncate(c.Message, 1024)})
		}
	}
	granted := map[string]bool{} // pending grants, by Machine
	for _, g := range b.Status.DisruptedMachines {
		m, ok := selected[g.Name]
		if !ok || now.Sub(g.GrantedAt.Time) >= GrantTTL {
			continue // gone (or no longer selected), or lapsed
		}
		if tookEffect(m, g.Kind) {
			continue // counted as unavailable
		}
		// Still pending: kept even while the Machine is unavailable for
		// another reason (a Node flapping NotReady), or the slot would be
		// freed while the disruption is about to start.
		ev.Disrupted = append(ev.Disrupted, g)
		granted[g.Name] = true
	}
	groups := groupByOwner(b.Namespace, machines, selected, owners)
	for _, name := range slices.Sorted(maps.Keys(selected)) {
		m := selected[name]
		if g := groups[ownerKey(m, owners)]; g != nil {
			g.add(m, granted[name])
			continue
		}
		// Alone: counted as it is.
		if m.DeletionTimestamp.IsZero() {
			ev.Expected++
		}
		if down, why := machinefacts.Unavailable(m); down {
			ev.Unavailable++
			ev.Why[name] = why
		} else if granted[name] {
			ev.Unavailable++
			ev.Why[name] = "granted a disruption"
		}
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		ev.Expected += g.expected()
		if n := g.unavailable(); n > 0 {
			ev.Unavailable += n
			ev.Why[key] = g.why()
		}
	}
	max, err := intstr.GetScaledValueFromIntOrPercent(&b.Spec.MaxUnavailable, int(ev.Expected), true)
	if err != nil || max < 0 {
		return Evaluation{}, fmt.Errorf("spec.maxUnavailable %s is not a non-negative number or percentage", b.Spec.MaxUnavailable.String())
	}
	ev.Max = int32(max)
	ev.Allowed = ev.Max - ev.Unavailable
	if ev.Allowed < 0 || ev.Expected == 0 {
		ev.Allowed = 0
	}
	sort.Slice(ev.Disrupted, func(i, j int) bool { return ev.Disrupted[i].GrantedAt.Before(&ev.Disrupted[j].GrantedAt) })
	sort.Slice(ev.Waiting, func(i, j int) bool { return ev.Waiting[i].Name < ev.Waiting[j].Name })
	return ev, nil
}

// tookEffect reports whether the Machine shows the disruption it was
// granted: deleted (any kind: it is going away), marked for or under
// remediation, or in or stopped in an in-place update. Being unavailable
// for another reason (its Node NotReady) is not the disruption starting.
func tookEffect(m *v1alpha1.Machine, kind v1alpha1.DisruptionKind) bool {
	if !m.DeletionTimestamp.IsZero() {
		return true
	}
	switch kind {
	case v1alpha1.DisruptionRemediation:
		return m.Status.FailureReason != "" ||
			meta.IsStatusConditionFalse(m.Status.Conditions, v1alpha1.OwnerRemediatedCondition) ||
			machinefacts.RemediatedExternally(m)
	case v1alpha1.DisruptionInPlaceUpdate:
		return machinefacts.InPlaceInProgress(m) || machinefacts.InPlaceStopped(m)
	}
	return false
}
