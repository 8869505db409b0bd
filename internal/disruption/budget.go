package disruption

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/millwright-dev/millwright/api/v1alpha1"
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

// Owners tells Evaluate which controller keeps the Machines of a
// MachineSet (the set controlling them) and at what size: key names the
// top owner (for example "MachineDeployment/web", or the set itself),
// replicas is that owner's spec.replicas. ok is false for a set Evaluate
// does not know the owner of: its Machines count alone. A nil Owners
// counts every Machine alone.
type Owners func(set string) (key string, replicas int32, ok bool)

// Evaluate computes a budget's state from the Machines of its namespace:
// which it selects, which are unavailable, which of its grants are still
// pending (a grant ends when its Machine shows the effect of its kind
// (record.tookEffect) or is gone, or after GrantTTL), and so how many more
// disruptions it may grant.
//
// Machines of an owner the budget selects wholly count against the
// owner's size, as a PodDisruptionBudget counts against its controller's
// scale (see ownerGroup.unavailable): a Machine that failed to be created
// counts as unavailable, and a Machine being replaced and its replacement
// not yet Ready count once. The other selected Machines count alone.
func Evaluate(b *v1alpha1.MachineDisruptionBudget, machines []*v1alpha1.Machine, owners Owners, now time.Time) (Evaluation, error) {
	t, err := NewTally(b, nil)
	if err != nil {
		return Evaluation{}, err
	}
	for _, m := range machines {
		t.Put(m)
	}
	return t.Evaluate(b, owners, now)
}
