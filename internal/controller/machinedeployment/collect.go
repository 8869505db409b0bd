package machinedeployment

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
)

// collect finds the deployment's MachineSets — adopting orphans its
// selector matches and releasing owned sets it no longer matches — and
// their Machines. It stops the reconcile while the cache does not yet show
// this controller's own last writes.
func (r *Reconciler) collect(ctx context.Context, s *scope) (reconcile.Result, error) {
	sel, err := s.md.Spec.Selector.AsSelector()
	if err != nil {
		// The API server validates selectors; this is a bug, not a retry.
		s.event(corev1.EventTypeWarning, "InvalidSelector", "spec.selector: "+err.Error())
		s.stop = true
		return reconcile.Result{}, nil
	}
	s.selector = sel
	if s.surge, s.unavailable, err = machinefacts.Fenceposts(s.md); err != nil {
		s.event(corev1.EventTypeWarning, "InvalidStrategy", err.Error())
		s.stop = true
		return reconcile.Result{}, nil
	}
	if s.inPlaceSettings, err = plan.InPlaceOf(s.md); err != nil {
		s.event(corev1.EventTypeWarning, "InvalidStrategy", err.Error())
		s.stop = true
		return reconcile.Result{}, nil
	}
	if s.inPlaceSettings != nil {
		// The Available condition's floor (replicas − maxUnavailable).
		s.unavailable = min(s.inPlaceSettings.MaxUnavailable, s.md.Spec.Replicas)
	}

	candidates, err := r.candidateSets(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, cached := range candidates {
		owner := metav1.GetControllerOfNoCopy(cached)
		matches := sel.Matches(labels.Set(cached.Labels))
		switch {
		case owner != nil && owner.UID == s.md.UID:
			// The later steps change the sets they keep in place: copies.
			ms := cached.DeepCopy()
			if !matches && !s.deleting {
				if err := r.release(ctx, s, ms); err != nil {
					return reconcile.Result{}, err
				}
				continue
			}
			s.sets = append(s.sets, ms)
		case owner == nil && matches && !s.deleting && cached.DeletionTimestamp.IsZero():
			ms := cached.DeepCopy()
			if err := r.adopt(ctx, s, ms); err != nil {
				return reconcile.Result{}, err
			}
			s.sets = append(s.sets, ms)
		}
	}
	sort.SliceStable(s.sets, func(i, j int) bool { return olderSet(s.sets[i], s.sets[j]) })

	if !r.expectations.satisfied(s.key, s.sets) {
		// Our last writes are on their way to the cache; their watch events
		// wake us, the requeue covers a lost one.
		s.stop, s.skipStatus = true, true
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}

	// The Machines are only counted, never changed: the cache's own objects
	// serve, and no reconcile deep-copies every Machine of its sets.
	s.machines = map[types.UID][]*v1alpha1.Machine{}
	s.machineCounts = map[types.UID]int{}
	s.counts = map[types.UID]plan.Counts{}
	if s.tallied = r.tallies != nil && !s.needsMachines(); s.tallied {
		// Counted already, one event at a time (tallies): no Machine is
		// read.
		for _, ms := range s.sets {
			s.machineCounts[ms.UID] = r.tallies.machines(ms.UID)
		}
		return reconcile.Result{}, nil
	}
	for _, ms := range s.sets {
		machines, err := ownerindex.Controlled[*v1alpha1.Machine](ctx, r.Views, r.Client, &v1alpha1.MachineList{}, ms.Namespace, ms.UID)
		if err != nil {
			return reconcile.Result{}, err
		}
		for _, m := range machines {
			if metav1.IsControlledBy(m, ms) {
				s.machines[ms.UID] = append(s.machines[ms.UID], m)
			}
		}
		s.machineCounts[ms.UID] = len(s.machines[ms.UID])
	}
	return reconcile.Result{}, nil
}

// needsMachines reports whether this reconcile reads its sets' Machines
// one by one, not only their counts: an in-place plan lists them, the
// zones' capacity reads their records, and an in-place update some
// Machine still waits for may have to be given back (releaseUnwanted).
func (s *scope) needsMachines() bool {
	if s.inPlaceSettings != nil || s.md.Spec.FailureDomains != nil {
		return true
	}
	for _, ms := range s.sets {
		if s.r.tallies.waiting(ms.UID) {
			return true
		}
	}
	return false
}

// candidateSets lists the sets the deployment controls and those without a
// controller, which it may adopt; not every set of the namespace. They are
// the cache's own objects: collect copies those it keeps, since a change
// to the cache's object would corrupt the cache for every reader.
func (r *Reconciler) candidateSets(ctx context.Context, s *scope) ([]*v1alpha1.MachineSet, error) {
	var out []*v1alpha1.MachineSet
	for _, by := range []client.MatchingFields{ownerindex.ControlledBy(s.md.UID), ownerindex.Orphans()} {
		list := &v1alpha1.MachineSetList{}
		if err := r.Client.List(ctx, list, client.InNamespace(s.md.Namespace), by, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// olderSet orders sets by creation, then name, as Kubernetes orders
// ReplicaSets.
func olderSet(a, b *v1alpha1.MachineSet) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// adopt makes the deployment the controller of an orphan set, only on the
// version read (package patch locks an owner-reference change).
func (r *Reconciler) adopt(ctx context.Context, s *scope, ms *v1alpha1.MachineSet) error {
	h := patch.New(r.Client, ms)
	if err := controllerutil.SetControllerReference(s.md, ms, r.Client.Scheme()); err != nil {
		return err
	}
	if err := h.PatchObject(ctx, ms); err != nil {
		return err
	}
	s.log.Info("adopted MachineSet", "machineSet", ms.Name)
	return nil
}

// release gives up a set the selector no longer matches, only on the
// version read, as adopt.
func (r *Reconciler) release(ctx context.Context, s *scope, ms *v1alpha1.MachineSet) error {
	h := patch.New(r.Client, ms)
	refs := ms.OwnerReferences[:0]
	for _, ref := range ms.OwnerReferences {
		if ref.UID != s.md.UID {
			refs = append(refs, ref)
		}
	}
	ms.OwnerReferences = refs
	if err := h.PatchObject(ctx, ms); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.log.Info("released MachineSet: the selector no longer matches it", "machineSet", ms.Name)
	return nil
}

// classify splits the sets into the new one and the old ones, and works
// out the new set's revision. The new one is the current one (see
// isCurrentSet) answering the latest restart (a spec.rolloutAfter), the
// oldest of those on a tie: while a rolloutAfter is still to come every
// set of the template is current, and the one the last restart made must
// stay the new one. A spec.rolloutAfter still to come asks to be woken
// when it passes.
func (r *Reconciler) classify(_ context.Context, s *scope) (reconcile.Result, error) {
	var res reconcile.Result
	if t := s.md.Spec.RolloutAfter; t != nil && s.now.Before(t.Time) {
		res.RequeueAfter = t.Sub(s.now)
	}
	for _, ms := range s.sets {
		if ms.DeletionTimestamp.IsZero() && isCurrentSet(ms, s.md, s.now) &&
			(s.newSet == nil || answeredRestart(ms).After(answeredRestart(s.newSet))) {
			s.newSet = ms
		}
	}
	for _, ms := range s.sets {
		if ms != s.newSet {
			s.oldSets = append(s.oldSets, ms)
		}
	}
	current := int64(0)
	if s.newSet != nil {
		current = revisionOf(s.newSet.Annotations)
	}
	s.newRevision = newSetRevision(current, s.planSets(s.oldSets))
	if s.newSet != nil {
		setRevision(&s.md.Annotations, s.newRevision)
	}
	return res, nil
}
