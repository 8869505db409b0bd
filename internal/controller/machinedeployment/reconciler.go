package machinedeployment

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/patch"
)

// Reconciler reconciles MachineDeployments.
type Reconciler struct {
	// Client reads (from the cache) and writes the control cluster.
	Client client.Client
	// APIReader reads without a cache: a MachineSet whose name is taken
	// but which the cache does not show yet. Nil means Client.
	APIReader client.Reader
	// Recorder emits Events on MachineDeployments.
	Recorder events.EventRecorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Nodes reads the target cluster's Nodes: a Manual in-place update
	// also takes a Machine whose Node has UpdateSelectedLabel. Nil: only
	// the Machine's own label selects it.
	Nodes client.Reader
	// Gate is asked before an in-place update starts on a Machine: the
	// MachineDisruptionBudgets selecting it must allow it
	// (docs/disruption-budgets.md). Nil allows everything.
	Gate *disruption.Gate
	// Views reads its sets' Machines as the cache's own objects, not
	// copies (ownerindex.Views). Nil reads them with a List.
	Views *ownerindex.Views

	// tallies counts each set's Machines from the Machine events (set up
	// with the watch); nil: every reconcile reads and counts them.
	tallies *tallies

	expectations expectations
	holds        holds
	statuses     patch.OwnStatus
	zoneCounts   zoneCountPace
}

// Reconcile moves one MachineDeployment's rollout one step and records
// where it stands.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	md := &v1alpha1.MachineDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, md); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.drop(req.String())
			r.holds.drop(req.String())
			r.statuses.Forget(req.NamespacedName)
			r.zoneCounts.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	behind := r.statuses.Behind(md)
	s := r.newScope(ctx, req.String(), md)

	res, err := r.reconcileSteps(ctx, s)
	if apierrors.IsConflict(err) {
		// Someone wrote in between; decide again from what they wrote.
		s.log.V(1).Info("write conflict, retrying", "error", err.Error())
		res, err = reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	if s.skipStatus {
		return requeue.Result(res, err)
	}
	res = requeue.Soonest(res, r.updateStatus(s))
	if perr := s.patch.PatchObject(ctx, s.md); perr != nil {
		return reconcile.Result{}, client.IgnoreNotFound(perr)
	}
	if behind && !equality.Semantic.DeepEqual(s.patch.Base().(*v1alpha1.MachineDeployment).Status, s.md.Status) {
		// Read at the version our last status write was made on: the
		// cache has not seen it, a write would be refused. Wait for it
		// (its watch event wakes us).
		return requeue.Result(requeue.Soonest(res, reconcile.Result{RequeueAfter: requeue.ConflictRetry}), err)
	}
	read := s.patch.Base().(*v1alpha1.MachineDeployment).Status
	if wait := r.zoneCounts.wait(req.NamespacedName, &read, &s.md.Status, s.now); wait > 0 {
		// Only the zones' counts moved, less than zoneCountInterval
		// after the last write: the next write takes them (pace.go).
		return requeue.Result(requeue.Soonest(res, reconcile.Result{RequeueAfter: wait}), err)
	}
	changed := !equality.Semantic.DeepEqual(read, s.md.Status)
	if perr := s.patch.PatchStatus(ctx, s.md); perr != nil {
		if apierrors.IsNotFound(perr) {
			return reconcile.Result{}, nil
		}
		if apierrors.IsConflict(perr) {
			// Its spec changed since the read, or the read was behind our
			// own last status write: decide again from what is there, after
			// requeue.ConflictRetry — or, when a step failed too, after the error
			// backoff, which controller-runtime applies to an error and
			// which starts shorter (a result beside an error is ignored).
			s.log.V(1).Info("status write conflict, retrying", "error", perr.Error())
			if err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
		}
		return reconcile.Result{}, fmt.Errorf("patching MachineDeployment status: %w", perr)
	}
	if changed {
		r.zoneCounts.Wrote(req.NamespacedName, s.now)
	}
	s.emitSpreadEvents()
	return requeue.Result(res, err)
}

// reconcileSteps runs the steps in order until one stops the reconcile.
func (r *Reconciler) reconcileSteps(ctx context.Context, s *scope) (reconcile.Result, error) {
	return requeue.Run(ctx, s, func() bool { return s.stop },
		r.collect,
		r.syncSpread,
		r.syncAutoscaler,
		r.rollback,
		r.classify,
		r.syncSets,
		r.rollout,
		r.cleanupHistory,
	)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

func (r *Reconciler) newScope(ctx context.Context, key string, md *v1alpha1.MachineDeployment) *scope {
	return &scope{
		r:  r,
		md: md,
		// Only this controller writes a deployment's status: on its uid and
		// generation when the status read is the one last written, else on
		// the version read (patch.OwnStatus).
		patch:          patch.New(r.Client, md, patch.WithOwnStatus(&r.statuses)),
		key:            key,
		now:            r.now(),
		log:            log.FromContext(ctx),
		frozen:         md.Labels[v1alpha1.FrozenLabel] != "",
		deleting:       !md.DeletionTimestamp.IsZero(),
		classes:        map[string]*v1alpha1.MachineClass{},
		classesMissing: map[string]bool{},
	}
}

// intAnnotation reads a non-negative int32 annotation.
func intAnnotation(annotations map[string]string, key string) (int32, bool) {
	v, ok := annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}
