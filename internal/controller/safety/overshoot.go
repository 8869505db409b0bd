package safety

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
)

// overshootVerdict is what the overshoot check does to one MachineSet or
// MachineDeployment.
type overshootVerdict struct {
	freeze, unfreeze, dropOverride bool
}

// judgeOvershoot decides the freeze of a group of machines Machines whose
// limit is replicas + maxSurge + safety-up. It freezes at the limit while
// the group grows (one of its Machines was created within the last
// overshooting period) and unfreezes at limit − down. A group whose size
// went down keeps Machines above its new limit until it has deleted them,
// slowly when a disruption budget grants one deletion at a time: that is
// not a runaway, which creates. A person's unfreeze annotation (override)
// lifts the freeze and holds it off until the count is back under the
// unfreeze mark, where the annotation is dropped: from then on the check
// guards the group again.
func judgeOvershoot(machines, limit, down int32, growing, frozen, override bool) overshootVerdict {
	calm := machines <= limit-down
	switch {
	case override:
		return overshootVerdict{unfreeze: frozen, dropOverride: calm}
	case !frozen && growing && machines >= limit:
		return overshootVerdict{freeze: true}
	case frozen && calm:
		return overshootVerdict{unfreeze: true}
	}
	return overshootVerdict{}
}

// overshoot freezes MachineSets and MachineDeployments that own too many
// Machines: a controller bug or a cloud that half-performs creates must
// not grow a fleet without bound. The MachineSet and MachineDeployment
// controllers honour FrozenLabel (no scale-up) and show a Frozen condition.
//
// Only Machines not being deleted count: they are what a runaway creates,
// and a rollout or scale-down with many Machines draining at once is not
// an overshoot.
type overshoot struct {
	client   client.Client
	views    *ownerindex.Views
	recorder events.EventRecorder
	cfg      Config
	// counts are the counts kept from the Machine events; fullAt, when
	// each owner ("kind/namespace/name") last counted every Machine.
	counts *machineCounts
	fullMu sync.Mutex
	fullAt map[string]time.Time
}

// reconcileSet checks one MachineSet.
func (o *overshoot) reconcileSet(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o.counts.synced.Store(true) // this controller's counting watch has synced (machineCounts.synced)
	ms := &v1alpha1.MachineSet{}
	if err := o.client.Get(ctx, req.NamespacedName, ms); err != nil {
		o.forget("MachineSet", req.NamespacedName)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	n, err := o.count(ctx, "MachineSet", req.NamespacedName, []*v1alpha1.MachineSet{ms})
	if err != nil {
		return reconcile.Result{}, err
	}
	var surge int32
	if md, err := o.deploymentOf(ctx, ms); err != nil {
		return reconcile.Result{}, err
	} else if md != nil {
		if surge, err = machinefacts.MaxSurge(md); err != nil {
			return reconcile.Result{}, err
		}
	}
	return o.apply(ctx, ms, "MachineSet", n, ms.Spec.Replicas+surge)
}

// reconcileDeployment checks one MachineDeployment, counting the Machines
// of all its MachineSets.
func (o *overshoot) reconcileDeployment(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	md := &v1alpha1.MachineDeployment{}
	if err := o.client.Get(ctx, req.NamespacedName, md); err != nil {
		o.forget("MachineDeployment", req.NamespacedName)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	surge, err := machinefacts.MaxSurge(md)
	if err != nil {
		return reconcile.Result{}, err
	}
	sets := &v1alpha1.MachineSetList{}
	if err := o.client.List(ctx, sets, client.InNamespace(md.Namespace), ownerindex.ControlledBy(md.UID), client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	var owned []*v1alpha1.MachineSet
	for i := range sets.Items {
		if ref := metav1.GetControllerOfNoCopy(&sets.Items[i]); ref != nil && ref.UID == md.UID {
			owned = append(owned, &sets.Items[i])
		}
	}
	n, err := o.count(ctx, "MachineDeployment", req.NamespacedName, owned)
	if err != nil {
		return reconcile.Result{}, err
	}
	return o.apply(ctx, md, "MachineDeployment", n, md.Spec.Replicas+surge)
}

// groupCount is what the check counts of a group's Machines.
type groupCount struct {
	machines int32
	// newest is when the youngest of them was created.
	newest time.Time
}

// count counts the Machines of sets, all of one owner (kind, key): from
// every Machine when the owner has not counted them so for a period (its
// first check, and its periodic one) or the kept counts are not complete
// yet, else from the counts kept from the Machine events (machineCounts).
func (o *overshoot) count(ctx context.Context, kind string, key types.NamespacedName, sets []*v1alpha1.MachineSet) (groupCount, error) {
	var n groupCount
	owner, now := kind+"/"+key.String(), time.Now()
	o.fullMu.Lock()
	last, ok := o.fullAt[owner]
	o.fullMu.Unlock()
	if ok && o.counts.synced.Load() && !changed.DueEvery(last, now, o.cfg.OvershootingPeriod) {
		for _, ms := range sets {
			o.counts.add(ms.UID, &n)
		}
		return n, nil
	}
	for _, ms := range sets {
		if err := o.countMachines(ctx, ms, &n); err != nil {
			return groupCount{}, err
		}
	}
	o.fullMu.Lock()
	defer o.fullMu.Unlock()
	if o.fullAt == nil {
		o.fullAt = map[string]time.Time{}
	}
	o.fullAt[owner] = now
	return n, nil
}

// forget drops what is kept of an owner that is gone.
func (o *overshoot) forget(kind string, key types.NamespacedName) {
	o.fullMu.Lock()
	defer o.fullMu.Unlock()
	delete(o.fullAt, kind+"/"+key.String())
}

// countMachines adds to n the Machines ms controls that the check counts
// (counts), reading every one.
func (o *overshoot) countMachines(ctx context.Context, ms *v1alpha1.MachineSet, n *groupCount) error {
	machines, err := ownerindex.Controlled[*v1alpha1.Machine](ctx, o.views, o.client, &v1alpha1.MachineList{}, ms.Namespace, ms.UID)
	if err != nil {
		return err
	}
	for _, m := range machines {
		if counts(m) {
			n.machines++
			if t := m.CreationTimestamp.Time; t.After(n.newest) {
				n.newest = t
			}
		}
	}
	return nil
}

// deploymentOf returns the MachineDeployment controlling ms, nil if none.
func (o *overshoot) deploymentOf(ctx context.Context, ms *v1alpha1.MachineSet) (*v1alpha1.MachineDeployment, error) {
	ref := metav1.GetControllerOfNoCopy(ms)
	if ref == nil || ref.Kind != "MachineDeployment" {
		return nil, nil
	}
	md := &v1alpha1.MachineDeployment{}
	err := o.client.Get(ctx, client.ObjectKey{Namespace: ms.Namespace, Name: ref.Name}, md)
	if apierrors.IsNotFound(err) || (err == nil && md.UID != ref.UID) {
		return nil, nil
	}
	return md, err
}

// apply judges obj (of kind), whose Machines are n and which may have
// allowed (replicas + maxSurge), writes the verdict to its metadata, and
// checks again after the overshooting period.
func (o *overshoot) apply(ctx context.Context, obj client.Object, kind string, n groupCount, allowed int32) (reconcile.Result, error) {
	limit := allowed + o.cfg.SafetyUp
	_, frozen := obj.GetLabels()[v1alpha1.FrozenLabel]
	_, override := obj.GetAnnotations()[v1alpha1.UnfreezeAnnotation]
	// The API server's creation times against this clock: a skew shorter
	// than the period only moves when a young Machine stops counting as one.
	growing := time.Since(n.newest) < o.cfg.OvershootingPeriod
	v := judgeOvershoot(n.machines, limit, o.cfg.SafetyDown, growing, frozen, override)
	again := reconcile.Result{RequeueAfter: o.cfg.OvershootingPeriod}
	if v == (overshootVerdict{}) {
		return again, nil
	}
	h := patch.New(o.client, obj)
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	switch {
	case v.freeze:
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1alpha1.FrozenLabel] = "true"
	case v.unfreeze:
		delete(labels, v1alpha1.FrozenLabel)
	}
	if v.dropOverride {
		delete(annotations, v1alpha1.UnfreezeAnnotation)
	}
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
	if err := h.PatchObject(ctx, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	o.report(ctx, obj, kind, v, override, n.machines, limit)
	return again, nil
}

// report logs and records an Event for a freeze or an unfreeze.
func (o *overshoot) report(ctx context.Context, obj client.Object, kind string, v overshootVerdict, override bool, machines, limit int32) {
	lg := log.FromContext(ctx)
	switch {
	case v.freeze:
		msg := fmt.Sprintf("%d Machines reached the safety limit %d (replicas + maxSurge + safety-up): scale-up frozen until they fall to %d or %s is set",
			machines, limit, limit-o.cfg.SafetyDown, v1alpha1.UnfreezeAnnotation)
		lg.Info("FROZEN: too many Machines", "kind", kind, "machines", machines, "limit", limit)
		o.event(obj, corev1.EventTypeWarning, "Frozen", msg)
	case v.unfreeze && override:
		lg.Info("unfrozen by the unfreeze annotation", "kind", kind, "machines", machines, "limit", limit)
		o.event(obj, corev1.EventTypeNormal, "Unfrozen", fmt.Sprintf("unfrozen by %s with %d Machines (limit %d)", v1alpha1.UnfreezeAnnotation, machines, limit))
	case v.unfreeze:
		lg.Info("unfrozen: the Machines fell back", "kind", kind, "machines", machines, "limit", limit)
		o.event(obj, corev1.EventTypeNormal, "Unfrozen", fmt.Sprintf("%d Machines, at most %d: scale-up resumes", machines, limit-o.cfg.SafetyDown))
	}
}

func (o *overshoot) event(obj client.Object, kind, reason, msg string) {
	if o.recorder != nil {
		o.recorder.Eventf(obj, nil, kind, reason, "Overshoot", "%s", msg)
	}
}
