package machine

import (
	"context"
	"hash/maphash"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
)

// sweepTick is how often the health sweep wakes: each time it enqueues
// the slice of Machines whose turn it is, so a fleet's re-checks are
// spread over HealthResync instead of arriving together.
const sweepTick = 10 * time.Second

// healthSweep re-checks, once every HealthResync, each Machine whose Node
// tells its health (see nodeTellsHealth), even when no event wakes it.
//
// Those Machines used to ask for it themselves, each reconcile ending
// with a RequeueAfter of HealthResync. The queue keeps such a request
// until its time comes, even for a Machine deleted meanwhile: in a
// rolling update of 5000 Machines that was one waiting entry for every
// Machine in the cache and one for each deleted in the last ten minutes,
// with the creation deadlines (see requeue.Deadline) the largest part of
// the manager's heap that grew with the Machines in flight
// (docs/benchmarks.md, "The health sweep and the deadlines"). The sweep
// holds nothing per Machine: it reads the cache's Machines at each tick
// and enqueues the slice due.
type healthSweep struct {
	every time.Duration
	// machines reads every Machine the cache holds, to read only.
	machines func(ctx context.Context) ([]*v1alpha1.Machine, error)
}

func (r *Reconciler) newHealthSweep() healthSweep {
	return healthSweep{every: r.Config.HealthResync, machines: func(ctx context.Context) ([]*v1alpha1.Machine, error) {
		return ownerindex.All[*v1alpha1.Machine](ctx, r.Views, r.Client, &v1alpha1.MachineList{})
	}}
}

// nodeTellsHealth says whether m is Running or Unknown and not on its
// way out: what changes it is its Node, watched, and the sweep re-checks
// it besides. A Machine on its way to Running or being deleted asks for
// its own next look.
func nodeTellsHealth(m *v1alpha1.Machine) bool {
	return m.DeletionTimestamp == nil && m.Status.FailureReason == "" &&
		(meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition) || m.Status.UnhealthySince != nil)
}

// slices is how many ticks one round of the sweep takes, and how long a
// tick is: every Machine is due once a round, a round lasts every.
func (h healthSweep) slices() (tick time.Duration, n uint32) {
	tick = min(sweepTick, h.every)
	return tick, uint32(max(1, h.every/tick))
}

// due says whether m's turn is slice of n: a hash of its UID, so each
// Machine keeps its turn from round to round.
func due(m *v1alpha1.Machine, slice, n uint32) bool {
	return maphash.String(sweepSeed, string(m.UID))%uint64(n) == uint64(slice)
}

// sweepSeed seeds the turns' hash: they need to hold only while the
// process runs.
var sweepSeed = maphash.MakeSeed()

// enqueue adds the Machines due in slice of n to q.
func (h healthSweep) enqueue(ctx context.Context, q workqueue.TypedInterface[reconcile.Request], slice, n uint32) error {
	machines, err := h.machines(ctx)
	if err != nil {
		return err
	}
	for _, m := range machines {
		if nodeTellsHealth(m) && due(m, slice, n) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
		}
	}
	return nil
}

// Start runs the sweep until ctx ends: a source of the machine
// controller's queue.
func (h healthSweep) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	tick, n := h.slices()
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for slice := uint32(0); ; slice = (slice + 1) % n {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := h.enqueue(ctx, q, slice, n); err != nil {
				log.FromContext(ctx).Error(err, "the health sweep could not read the cache's Machines; the next tick tries again")
			}
		}
	}()
	return nil
}

func (h healthSweep) String() string { return "health sweep every " + h.every.String() }
