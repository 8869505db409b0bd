package machineclass

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/controller/finalizer"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/patch"
)

// Condition reasons and the Event reason set by the controller.
const (
	ReasonDriverRegistered    = "DriverRegistered"
	ReasonDriverNotRegistered = "DriverNotRegistered"
	ReasonInUse               = "InUse"
	ReasonNotInUse            = "NotInUse"
	// ReasonDeletionBlocked is the Warning Event on a class deleted while in use.
	ReasonDeletionBlocked = "DeletionBlocked"
)

// Reconciler reconciles MachineClasses.
type Reconciler struct {
	// Client reads (from the cache) and writes the control cluster.
	Client client.Client
	// APIReader reads the control cluster without a cache: whether a class
	// is unused is confirmed there before its finalizer goes.
	APIReader client.Reader
	// Recorder emits Events on MachineClasses.
	Recorder events.EventRecorder
	// Providers reports whether the manager has a driver for a
	// spec.provider.
	Providers func(provider string) bool
	// Provisioning is the machine controller's count of creates and
	// deletes in flight and queued per class, which the class's status
	// publishes; nil: none shown.
	Provisioning *classlimit.Limiter
	// Views counts the users of a class from the cache's index without
	// copying them (ownerindex.Views): at 5000 Machines each count by List
	// allocated 3.6 MiB. Nil counts them with a List.
	Views *ownerindex.Views

	pace statusPace
}

// users counts what references a class.
type users struct {
	machines, sets, deployments int
}

func (u users) any() bool { return u.machines+u.sets+u.deployments > 0 }

func (u users) String() string {
	var parts []string
	for _, p := range []struct {
		n    int
		kind string
	}{{u.machines, "Machine(s)"}, {u.sets, "MachineSet(s)"}, {u.deployments, "MachineDeployment(s)"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.kind))
		}
	}
	return strings.Join(parts, ", ")
}

// Reconcile holds or releases one class's finalizer and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	class := &v1alpha1.MachineClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := time.Now()
	// The status only on the version read: a count from a stale cache
	// must not overwrite a newer one.
	h := patch.New(r.Client, class, patch.WithStatusLock())
	original := h.Base().(*v1alpha1.MachineClass)
	u, err := r.users(ctx, class)
	if err != nil {
		return reconcile.Result{}, err
	}

	deleting := !class.DeletionTimestamp.IsZero()
	switch {
	case u.any() && !deleting:
		_, err = finalizer.Add(ctx, r.Client, v1alpha1.MachineClassFinalizer, class, original)
	case u.any(): // the finalizer holds the class
	case controllerutil.ContainsFinalizer(class, v1alpha1.MachineClassFinalizer) && r.usedLive(ctx, class):
		// The cache has not seen a new user yet: its event comes.
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	default:
		// Unused: nothing to protect (a Machine made later adds it again).
		_, err = finalizer.Remove(ctx, r.Client, v1alpha1.MachineClassFinalizer, class, original)
		if deleting && err == nil {
			r.pace.Forget(class.UID)
			return reconcile.Result{}, nil // gone, or held by someone else's finalizer
		}
	}
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil // the cache is behind: decide again
	}
	if err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}

	if r.Provisioning != nil {
		// Before the counts are read: a raised limit wakes the queued
		// Machines now.
		r.Provisioning.SetLimits(client.ObjectKeyFromObject(class), class.Spec.MaxConcurrentCreates, class.Spec.MaxConcurrentDeletes)
	}
	r.setStatus(class, u)
	if wait := r.pace.wait(class.UID, &original.Status, &class.Status, now); wait > 0 && !deleting {
		// Counts alone changed, within their buckets, less than
		// countInterval after the last write: the next write takes them
		// (pace.go). The requeue makes sure one comes.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if inUse := meta.FindStatusCondition(class.Status.Conditions, v1alpha1.InUseCondition); deleting && u.any() &&
		!equality.Semantic.DeepEqual(meta.FindStatusCondition(original.Status.Conditions, v1alpha1.InUseCondition), inUse) {
		r.event(class, inUse.Message) // once per change of the count, not per reconcile
	}
	changed := !equality.Semantic.DeepEqual(original.Status, class.Status)
	err = h.PatchStatus(ctx, class)
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	if err == nil && changed {
		r.pace.Wrote(class.UID, now)
	}
	return reconcile.Result{}, client.IgnoreNotFound(err)
}

// users counts the Machines, MachineSets and MachineDeployments of the
// class's namespace that reference it.
func (r *Reconciler) users(ctx context.Context, class *v1alpha1.MachineClass) (users, error) {
	ns := class.Namespace
	machines, err := ownerindex.Indexed[*v1alpha1.Machine](ctx, r.Views, r.Client, &v1alpha1.MachineList{}, ns, ownerindex.ClassIndex, class.Name)
	if err != nil {
		return users{}, err
	}
	sets, err := ownerindex.Indexed[*v1alpha1.MachineSet](ctx, r.Views, r.Client, &v1alpha1.MachineSetList{}, ns, ownerindex.ClassIndex, class.Name)
	if err != nil {
		return users{}, err
	}
	deployments, err := ownerindex.Indexed[*v1alpha1.MachineDeployment](ctx, r.Views, r.Client, &v1alpha1.MachineDeploymentList{}, ns, ownerindex.ClassIndex, class.Name)
	if err != nil {
		return users{}, err
	}
	return users{machines: len(machines), sets: len(sets), deployments: len(deployments)}, nil
}

// usedLive reports whether anything references the class, read from the
// API server rather than the cache: the cache may not show a Machine just
// made, and dropping the finalizer then could let the class go under a
// Machine that needs it to delete its VM. An error counts as used.
func (r *Reconciler) usedLive(ctx context.Context, class *v1alpha1.MachineClass) bool {
	in := client.InNamespace(class.Namespace)
	for _, l := range []client.ObjectList{&v1alpha1.MachineList{}, &v1alpha1.MachineSetList{}, &v1alpha1.MachineDeploymentList{}} {
		if err := r.APIReader.List(ctx, l, in); err != nil {
			return true
		}
		used := false
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			if c := ownerindex.ClassOf(o.(client.Object)); c != nil && c.Name == class.Name {
				used = true
			}
			return nil
		})
		if used {
			return true
		}
	}
	return false
}

func (r *Reconciler) setStatus(class *v1alpha1.MachineClass, u users) {
	st := &class.Status
	st.ObservedGeneration = class.Generation
	st.Machines = int32(u.machines)
	if r.Provisioning != nil {
		c := r.Provisioning.Counts(client.ObjectKeyFromObject(class))
		st.CreatesInFlight, st.CreatesQueued = c.CreatesInFlight, c.CreatesQueued
		st.DeletesInFlight, st.DeletesQueued = c.DeletesInFlight, c.DeletesQueued
	}
	set := func(t string, ok bool, yes, no, message string) {
		c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: yes, Message: message, ObservedGeneration: class.Generation}
		if !ok {
			c.Status, c.Reason = metav1.ConditionFalse, no
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	available := r.Providers != nil && r.Providers(class.Spec.Provider)
	driverMessage := "the manager has a driver for provider " + class.Spec.Provider
	if !available {
		driverMessage = "the manager has no driver for provider " + class.Spec.Provider + " (its --driver flag)"
	}
	set(v1alpha1.DriverAvailableCondition, available, ReasonDriverRegistered, ReasonDriverNotRegistered, driverMessage)
	useMessage := "no Machine, MachineSet or MachineDeployment uses the class"
	switch {
	case u.any() && !class.DeletionTimestamp.IsZero():
		useMessage = "deletion waits: the class is still used by " + u.String()
	case u.any():
		useMessage = "used by " + u.String() + "; its deletion would wait for them to go"
	}
	set(v1alpha1.InUseCondition, u.any(), ReasonInUse, ReasonNotInUse, useMessage)
}

func (r *Reconciler) event(class *v1alpha1.MachineClass, message string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(class, nil, corev1.EventTypeWarning, ReasonDeletionBlocked, "Delete", "%s", message)
	}
}
