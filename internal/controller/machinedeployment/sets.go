package machinedeployment

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/names"
)

// scaleSet sets a set's spec.replicas (as the planner decided, which
// holds a frozen deployment's sizes) and records the deployment's size it
// was decided for.
func (s *scope) scaleSet(ctx context.Context, ms *v1alpha1.MachineSet, replicas int32) error {
	if ms == nil || !ms.DeletionTimestamp.IsZero() {
		return nil
	}
	from := ms.Spec.Replicas
	if _, err := s.patchSet(ctx, ms, func(ms *v1alpha1.MachineSet) {
		ms.Spec.Replicas = replicas
		s.setReplicasAnnotations(&ms.Annotations)
	}); err != nil {
		return err
	}
	if from == replicas {
		return nil
	}
	direction := "up"
	if replicas < from {
		direction = "down"
	}
	s.log.Info("scaled MachineSet", "machineSet", ms.Name, "from", from, "to", replicas)
	// One Event for the reconcile's sets (see rollout): a rolling update
	// scales two sets in most reconciles, and an Event is an API write.
	s.scaled = append(s.scaled, fmt.Sprintf("Scaled %s MachineSet %s from %d to %d", direction, ms.Name, from, replicas))
	return nil
}

// setReplicasAnnotations records the deployment's replicas and budget, the
// marks of a scaling event and the base of proportional scaling.
func (s *scope) setReplicasAnnotations(annotations *map[string]string) {
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	(*annotations)[v1alpha1.DesiredReplicasAnnotation] = strconv.Itoa(int(s.md.Spec.Replicas))
	(*annotations)[v1alpha1.MaxReplicasAnnotation] = strconv.Itoa(int(s.md.Spec.Replicas + s.surge))
}

// createNewSet creates the set of the current template with replicas
// Machines (the planner's: none while frozen). A name already taken by a set of another
// template is a hash collision: collisionCount grows and the next reconcile
// tries the next name.
func (r *Reconciler) createNewSet(ctx context.Context, s *scope, replicas int32) (reconcile.Result, error) {
	md := s.md
	hash := templateHash(&md.Spec.Template, md.Status.CollisionCount, restartDue(md, s.now))
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      names.Join(md.Name, hash, names.MaxLabelValue), // its Machines' set-name label
			Namespace: md.Namespace,
			Labels:    templateLabels(md, hash),
		},
		Spec: v1alpha1.MachineSetSpec{
			Replicas:     replicas,
			Selector:     *md.Spec.Selector.DeepCopy(),
			Template:     *md.Spec.Template.DeepCopy(),
			DeletePolicy: v1alpha1.DeletePolicyRandom,
		},
	}
	if ms.Spec.Selector.MatchLabels == nil {
		ms.Spec.Selector.MatchLabels = map[string]string{}
	}
	ms.Spec.Selector.MatchLabels[v1alpha1.TemplateHashLabel] = hash
	syncTemplate(md, ms)
	ms.Spec.AutoPreserveFailedMax = autoPreserveLimit(s, true)
	ms.Spec.FailureDomains = s.placementFor(true)
	setRevision(&ms.Annotations, s.newRevision)
	s.setReplicasAnnotations(&ms.Annotations)
	if due := restartDue(md, s.now); due != nil {
		ms.Annotations[v1alpha1.RolloutAfterAnnotation] = due.UTC().Format(time.RFC3339)
	}
	if capacity, ok, err := r.capacityFor(ctx, s, &ms.Spec.Template); err != nil {
		return reconcile.Result{}, err
	} else if ok {
		applyCapacity(&ms.Annotations, capacity)
	}
	if err := controllerutil.SetControllerReference(md, ms, r.Client.Scheme()); err != nil {
		return reconcile.Result{}, err
	}

	err := r.Client.Create(ctx, ms)
	if apierrors.IsAlreadyExists(err) {
		existing := &v1alpha1.MachineSet{}
		if gerr := r.apiReader().Get(ctx, client.ObjectKeyFromObject(ms), existing); gerr != nil {
			return reconcile.Result{}, gerr
		}
		if metav1.IsControlledBy(existing, md) && isCurrentSet(existing, md, s.now) {
			// Ours, made by an earlier reconcile the cache has not shown yet.
			s.adoptNewSet(existing)
			return reconcile.Result{}, nil
		}
		md.Status.CollisionCount = ptr.To(ptr.Deref(md.Status.CollisionCount, 0) + 1)
		s.log.Info("MachineSet name taken by another template: hash collision", "machineSet", ms.Name,
			"collisionCount", *md.Status.CollisionCount)
		// The status write does not wake us: look again soon.
		s.stop = true
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	if err != nil {
		s.event(corev1.EventTypeWarning, "CreateFailed", fmt.Sprintf("creating MachineSet %s: %v", ms.Name, err))
		return reconcile.Result{}, err
	}
	r.expectations.expectCreated(s.key, ms.Name)
	s.createdNewSet = true
	setRevision(&md.Annotations, s.newRevision)
	s.adoptNewSet(ms)
	s.log.Info("created MachineSet", "machineSet", ms.Name, "replicas", replicas, "revision", s.newRevision)
	s.event(corev1.EventTypeNormal, reasonScalingSet, fmt.Sprintf("Created MachineSet %s with %d replicas%s", ms.Name, replicas, s.restartNote()))
	return reconcile.Result{}, nil
}

// adoptNewSet makes ms the scope's new set.
func (s *scope) adoptNewSet(ms *v1alpha1.MachineSet) {
	s.newSet = ms
	s.sets = append(s.sets, ms)
	setRevision(&s.md.Annotations, revisionOf(ms.Annotations))
}

// templateLabelsOf is the set's template labels without the deployment's
// own bookkeeping, for copying a template back into the deployment.
func templateLabelsOf(md *v1alpha1.MachineDeployment, ms *v1alpha1.MachineSet) map[string]string {
	l := maps.Clone(ms.Spec.Template.Metadata.Labels)
	delete(l, v1alpha1.TemplateHashLabel)
	for _, k := range []string{v1alpha1.MachineDeploymentNameLabel, v1alpha1.AutoscalerDeploymentNameLabel} {
		if _, mine := md.Spec.Template.Metadata.Labels[k]; !mine && !selects(&md.Spec.Selector, k) {
			delete(l, k)
		}
	}
	return l
}

// selects reports whether the selector names the label key.
func selects(sel *v1alpha1.LabelSelector, key string) bool {
	if _, ok := sel.MatchLabels[key]; ok {
		return true
	}
	for _, e := range sel.MatchExpressions {
		if e.Key == key {
			return true
		}
	}
	return false
}

// restartNote explains a new set of a template the deployment already has
// a set of: spec.rolloutAfter passed (isCurrentSet).
func (s *scope) restartNote() string {
	due := restartDue(s.md, s.now)
	if due == nil {
		return ""
	}
	for _, ms := range s.oldSets {
		if sameMachines(&ms.Spec.Template, &s.md.Spec.Template) {
			return fmt.Sprintf(" to replace every Machine: spec.rolloutAfter %s has passed", due.UTC().Format(time.RFC3339))
		}
	}
	return ""
}
