package machinedisruptionbudget

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// kept is a budget's tally between reconciles (disruption.Tally), and
// when it was made from every Machine of the namespace.
//
// A reconcile puts again only the Machines whose events arrived (the
// Machine watch notes them, setup.go): its work does not grow with the
// fleet. The tally is made again from every Machine the first time,
// when the spec of any budget of the namespace changed
// (disruption.TallyContext), and changed.FullPassEvery after the last
// time, so that an event lost on the way (its mapping to the budgets
// failed) is made good within that.
type kept struct {
	*disruption.Tally
	fullAt time.Time
}

// specError is a budget's spec written around admission: it grants
// nothing until fixed.
type specError struct{ error }

// evaluate brings b's tally up to date and evaluates b from it: its
// state, the other budgets sharing its Machines, and when the tally was
// last made from every Machine. A specError says b's spec does not parse.
func (r *Reconciler) evaluate(ctx context.Context, b *v1alpha1.MachineDisruptionBudget, now time.Time) (
	ev disruption.Evaluation, overlapping []string, fullAt time.Time, err error) {
	others := &v1alpha1.MachineDisruptionBudgetList{}
	if err := r.Client.List(ctx, others, client.InNamespace(b.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ev, nil, fullAt, err
	}
	owners, err := r.owners(ctx, b.Namespace)
	if err != nil {
		return ev, nil, fullAt, err
	}
	key := client.ObjectKeyFromObject(b)
	t, names := r.tallies.Take(key)
	// Not kept on an error: the next reconcile makes it from every
	// Machine, the names taken here among them.
	if t, err = r.update(ctx, b, others.Items, t, names, now); err != nil {
		return ev, nil, fullAt, err
	}
	granted, err := r.putGranted(ctx, b, t)
	defer func() {
		for _, name := range granted {
			t.Remove(name)
		}
		if err == nil || errors.As(err, &specError{}) {
			if checkTally.Load() {
				checkKept(key.String(), t)
			}
			fullAt = t.fullAt // read before it is kept (changed.Store.Edit)
			r.tallies.Keep(key, t)
		}
	}()
	if err != nil {
		return ev, nil, fullAt, err
	}
	if ev, err = t.Evaluate(b, owners, now); err != nil {
		return ev, nil, fullAt, specError{err} // the tally does not depend on maxUnavailable: kept
	}
	return ev, t.Overlapping(), fullAt, nil
}

// update is t with the Machines names put again, as the cache shows them
// now, or a tally made from every Machine of the namespace (see kept).
func (r *Reconciler) update(ctx context.Context, b *v1alpha1.MachineDisruptionBudget, others []v1alpha1.MachineDisruptionBudget,
	t *kept, names map[string]bool, now time.Time) (*kept, error) {
	if t == nil || t.Context() != disruption.TallyContext(b, others) || changed.FullPassDue(t.fullAt, now) {
		fresh, err := disruption.NewTally(b, others)
		if err != nil {
			return nil, specError{err}
		}
		if checkTally.Load() {
			fresh.KeepMachines()
		}
		// The cache's own objects, not copies: the tally only reads them.
		machines, err := ownerindex.InNamespace[*v1alpha1.Machine](ctx, r.Views, r.Client, &v1alpha1.MachineList{}, b.Namespace)
		if err != nil {
			return nil, err
		}
		for _, m := range machines {
			fresh.Put(m)
		}
		return &kept{Tally: fresh, fullAt: now}, nil
	}
	for name := range names {
		m, err := ownerindex.Get(ctx, r.Views, r.Client, b.Namespace, name, &v1alpha1.Machine{})
		if err != nil {
			return nil, err
		}
		if m == nil {
			t.Remove(name) // gone
		} else {
			t.Put(m)
		}
	}
	return t, nil
}

// putGranted puts in t, from the API server, the Machines with a grant of
// b that the cache does not show: one it has not seen yet is not one that
// is gone. They stay only for this evaluation (the caller removes those
// it names, on an error too): the cache's event for each puts it for good.
func (r *Reconciler) putGranted(ctx context.Context, b *v1alpha1.MachineDisruptionBudget, t *kept) ([]string, error) {
	var put []string
	for _, g := range b.Status.DisruptedMachines {
		if t.Has(g.Name) {
			continue
		}
		m := &v1alpha1.Machine{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: g.Name}, m)
		switch {
		case err == nil:
			t.Put(m)
			put = append(put, g.Name)
		case !apierrors.IsNotFound(err):
			return put, err
		}
	}
	return put, nil
}

// checkTally makes every reconcile make its tally again from its
// Machines and compare the two (disruption.Tally.Check), recording a
// difference in tallyDifferences: the package's tests set it, so every
// test of the budget checks the sums.
var checkTally atomic.Bool

var (
	tallyDifferencesMu sync.Mutex
	tallyDifferences   []string
)

func checkKept(key string, t *kept) {
	if d := t.Check(); d != "" {
		tallyDifferencesMu.Lock()
		defer tallyDifferencesMu.Unlock()
		tallyDifferences = append(tallyDifferences, key+": "+d)
	}
}
