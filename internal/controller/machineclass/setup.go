package machineclass

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
)

// SetupWithManager registers the controller and its indexes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if err := ownerindex.RegisterClass(ctx, mgr, &v1alpha1.Machine{}, &v1alpha1.MachineSet{}, &v1alpha1.MachineDeployment{}); err != nil {
		return err
	}
	// Only a user coming or going changes a class's count: status writes
	// of its Machines (most of their updates) do not wake the controller.
	// A template's class can change (a rollout): both classes count again.
	enqueue := classEnqueuer{c: mgr.GetClient()}
	toClass := handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { enqueue.add(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				enqueue.add(ctx, q, e.ObjectOld)
				enqueue.add(ctx, q, e.ObjectNew)
			}
		},
		DeleteFunc:  func(ctx context.Context, e event.DeleteEvent, q queue) { enqueue.add(ctx, q, e.Object) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { enqueue.add(ctx, q, e.Object) },
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("machineclass").
		For(&v1alpha1.MachineClass{}).
		Watches(&v1alpha1.Machine{}, toClass).
		Watches(&v1alpha1.MachineSet{}, toClass).
		Watches(&v1alpha1.MachineDeployment{}, toClass).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency})
	if r.Provisioning != nil {
		// Counts of creates and deletes change with every call: one
		// reconcile per class per provisioningCoalesce at most, and one
		// status write per countInterval while they only move (pace.go).
		b = b.WatchesRawSource(source.Channel(r.Provisioning.Changed(), handler.Funcs{
			GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) {
				q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}, provisioningCoalesce)
			},
		}))
	}
	return b.Complete(r)
}

// provisioningCoalesce is how late a class's status may show its creates
// and deletes in flight and queued: the changes meanwhile merge into one
// reconcile (the workqueue keeps one waiting entry per class, at its
// earliest time), so a scale-up of a thousand Machines writes the class's
// status every few seconds, not twice per Machine.
const provisioningCoalesce = 2 * time.Second

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// countCoalesce is how long a class already held by its finalizer waits
// before counting its users again: a scale-up of a thousand Machines
// changes the count a thousand times, and each count written was an API
// write per Machine (half a write per Machine at N=1000, see
// docs/benchmarks.md). A count people read may be a few seconds late.
const countCoalesce = 5 * time.Second

// classEnqueuer enqueues the class a user uses.
type classEnqueuer struct{ c client.Reader }

// add enqueues the class o uses, if any: at once when the class may need
// its finalizer (it has none yet, it is being deleted, or it last counted
// no user and may be dropping its finalizer), since that is what keeps a
// class in use from going; otherwise after countCoalesce,
// the users that come and go meanwhile merging into one reconcile (the
// workqueue keeps one waiting entry per class).
func (e classEnqueuer) add(ctx context.Context, q queue, o client.Object) {
	ref := ownerindex.ClassOf(o)
	if ref == nil {
		return
	}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}
	class := &v1alpha1.MachineClass{}
	if err := e.c.Get(ctx, req.NamespacedName, class); err == nil && class.DeletionTimestamp.IsZero() &&
		controllerutil.ContainsFinalizer(class, v1alpha1.MachineClassFinalizer) &&
		meta.IsStatusConditionTrue(class.Status.Conditions, v1alpha1.InUseCondition) {
		q.AddAfter(req, countCoalesce)
		return
	}
	q.Add(req)
}
