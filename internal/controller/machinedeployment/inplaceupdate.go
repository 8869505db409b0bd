package machinedeployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
)

// nodeSelectionResync is how soon a Manual in-place update waiting for a
// selection looks again: a Node's label wakes no reconcile (a Machine's
// does).
const nodeSelectionResync = 30 * time.Second

// rolloutInPlace carries out an in-place plan (docs/in-place-updates.md):
// it creates the new set when there is none, else writes the plan's steps
// in order — each set write self-consistent, a Machine's target last —
// and stops at the first error (the next reconcile plans again from what
// was written).
func (r *Reconciler) rolloutInPlace(ctx context.Context, s *scope, p plan.Result) (reconcile.Result, error) {
	s.inPlace = p.InPlace
	for _, t := range p.Targets {
		if t.Create {
			s.log.V(1).Info("rollout plan", "mode", p.Mode, "machineSet", "new", "to", t.To, "why", t.Why)
			return r.createNewSet(ctx, s, t.To)
		}
	}
	for _, st := range p.Steps {
		s.log.V(1).Info("in-place step", "machineSet", st.Set, "replicas", st.Replicas, "movingOut", st.MovingOut,
			"movingIn", st.MovingIn, "machine", st.Machine, "target", st.Target, "delete", st.Delete, "why", st.Why)
		var err error
		switch {
		case st.Set != "":
			err = s.writeInPlaceSet(ctx, st)
		default:
			err = s.writeInPlaceMachine(ctx, st)
		}
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	s.inPlaceEvents(p.InPlace)
	res := reconcile.Result{RequeueAfter: s.nextAvailable}
	if p.InPlace != nil && p.InPlace.AwaitingSelection && s.r.Nodes != nil {
		res.RequeueAfter = nodeSelectionResync
	}
	return res, nil
}

// writeInPlaceSet writes one set step: spec.replicas and both lists in one
// patch, on the version read.
func (s *scope) writeInPlaceSet(ctx context.Context, st plan.Step) error {
	ms := s.set(st.Set)
	if ms == nil || !ms.DeletionTimestamp.IsZero() {
		return nil
	}
	from := ms.Spec.Replicas
	wrote, err := s.patchSet(ctx, ms, func(ms *v1alpha1.MachineSet) {
		ms.Spec.Replicas = st.Replicas
		s.setReplicasAnnotations(&ms.Annotations)
		setList(ms.Annotations, v1alpha1.InPlaceMovingOutAnnotation, st.MovingOut)
		setList(ms.Annotations, v1alpha1.InPlaceMovingInAnnotation, st.MovingIn)
	})
	if err != nil {
		return err
	}
	if wrote {
		s.r.expectations.expectLists(s.key, ms.UID, inPlaceLists(ms))
	}
	if from != st.Replicas {
		s.log.Info("scaled MachineSet for an in-place update", "machineSet", ms.Name, "from", from, "to", st.Replicas, "why", st.Why)
	}
	return nil
}

func setList(annotations map[string]string, key string, names []string) {
	if len(names) == 0 {
		delete(annotations, key)
		return
	}
	annotations[key] = machinefacts.JoinInPlaceNames(names)
}

// writeInPlaceMachine writes one Machine step: its target annotation, the
// delete mark of a refused one, or the removal of a failed one's stale
// target.
func (s *scope) writeInPlaceMachine(ctx context.Context, st plan.Step) error {
	m := s.machine(st.Machine)
	if m == nil {
		return nil
	}
	updated := m.DeepCopy() // m is the cache's object (collect)
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	switch {
	case st.Delete:
		updated.Annotations[v1alpha1.DeleteMachineAnnotation] = "true"
	case st.Clear:
		delete(updated.Annotations, v1alpha1.InPlaceTargetAnnotation)
	default:
		updated.Annotations[v1alpha1.InPlaceTargetAnnotation] = st.Target
	}
	if err := patch.New(s.r.Client, m).PatchObject(ctx, updated); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	return nil
}

// machine finds one of the deployment's Machines by name.
func (s *scope) machine(name string) *v1alpha1.Machine {
	for _, ms := range s.sets {
		for _, m := range s.machines[ms.UID] {
			if m.Name == name {
				return m
			}
		}
	}
	return nil
}

// inPlaceEvents emits what the plan did with Machines: one Normal Event
// for the starts and moves, a Warning per replacement and revert.
func (s *scope) inPlaceEvents(r *plan.InPlaceReport) {
	if r == nil {
		return
	}
	var did []string
	if len(r.Started) > 0 {
		did = append(did, "started updating in place: "+strings.Join(r.Started, ", "))
	}
	if len(r.Finished) > 0 {
		did = append(did, "updated in place: "+strings.Join(r.Finished, ", "))
	}
	if len(did) > 0 {
		s.event(corev1.EventTypeNormal, reasonInPlaceUpdate, strings.Join(did, "; "))
	}
	for _, name := range r.Replaced {
		msg := ""
		if m := s.machine(name); m != nil && m.Status.InPlaceUpdate != nil {
			msg = ": " + m.Status.InPlaceUpdate.Message
		}
		s.event(corev1.EventTypeWarning, reasonInPlaceRefused, fmt.Sprintf("replacing Machine %s: its driver cannot update it in place%s", name, msg))
	}
	for _, name := range r.Reverted {
		s.event(corev1.EventTypeWarning, reasonInPlaceFailed, fmt.Sprintf("the in-place update of Machine %s failed; it stays, cordoned, in its old MachineSet (remove its %s annotation to retry)", name, v1alpha1.InPlaceTargetAnnotation))
	}
}

// inPlaceSet adds what an in-place plan reads of a set: its lists and its
// Machines.
func (s *scope) inPlaceSet(ctx context.Context, ms *v1alpha1.MachineSet, v *plan.Set) {
	v.MovingOut = machinefacts.InPlaceNames(ms.Annotations[v1alpha1.InPlaceMovingOutAnnotation])
	v.MovingIn = machinefacts.InPlaceNames(ms.Annotations[v1alpha1.InPlaceMovingInAnnotation])
	minReady := time.Duration(s.md.Spec.MinReadySeconds) * time.Second
	manual := s.inPlaceSettings != nil && s.inPlaceSettings.Manual
	for _, m := range s.machines[ms.UID] {
		pm := plan.Machine{
			Name: m.Name, Created: m.CreationTimestamp.Time,
			Available: machinefacts.Available(m, minReady, s.now),
			Deleting:  !m.DeletionTimestamp.IsZero(),
			Held:      m.DeletionTimestamp.IsZero() && machinefacts.Preserved(m),
			Broken:    m.Status.FailureReason != "",
			Target:    m.Annotations[v1alpha1.InPlaceTargetAnnotation],
		}
		_, pm.Marked = m.Annotations[v1alpha1.DeleteMachineAnnotation]
		if u := m.Status.InPlaceUpdate; u != nil {
			pm.UpdateTarget, pm.Phase, pm.Message = u.TargetSet, u.Phase, u.Message
		}
		if manual {
			pm.Selected = s.selected(ctx, m)
		}
		v.Members = append(v.Members, pm)
	}
}

// selected reports whether a person selected m for a Manual in-place
// update: UpdateSelectedLabel "true" on it or on its Node.
func (s *scope) selected(ctx context.Context, m *v1alpha1.Machine) bool {
	if m.Labels[v1alpha1.UpdateSelectedLabel] == "true" {
		return true
	}
	if s.r.Nodes == nil || m.Status.NodeRef == nil {
		return false
	}
	node := &corev1.Node{}
	if err := s.r.Nodes.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node); err != nil {
		return false
	}
	return node.Labels[v1alpha1.UpdateSelectedLabel] == "true"
}
