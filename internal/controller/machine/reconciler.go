// Package machine is the machine controller: it drives one Machine through
// its phases — create the VM, wait for its Node, keep it healthy, sync the
// Node's labels and taints, and on deletion drain the Node, delete the VM
// and the Node. A reconcile never blocks: every long operation records where
// it is in the Machine's status and requeues, so a restarted manager
// resumes exactly where the old one stopped.
package machine

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/leaderfence"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/ownwrites"
	"github.com/millwright-dev/millwright/internal/patch"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// Reconciler reconciles Machines. Machines and MachineClasses live in the
// control cluster; Nodes, pods and bootstrap tokens in the target cluster
// (often the same cluster).
type Reconciler struct {
	// Client reads (from the cache) and writes the control cluster.
	Client client.Client
	// APIReader reads the control cluster without a cache: Secrets are read
	// only when a driver call needs them, so they are never all cached.
	APIReader client.Reader
	// Target reads (from the cache) and writes Nodes of the target cluster.
	Target client.Client
	// TargetAPI reads the target cluster without a cache: the pods of a Node
	// being drained, bootstrap token Secrets.
	TargetAPI client.Client
	// Drivers maps a MachineClass spec.provider to its driver.
	Drivers map[string]driver.Driver
	// Config holds the lifecycle defaults.
	Config Config
	// Recorder emits Events on Machines.
	Recorder events.EventRecorder
	// Namespace, when set, is the only namespace the manager watches;
	// Nodes of Machines elsewhere are ignored.
	Namespace string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Gate, when it reports frozen, stops every transition of a Machine
	// not being deleted (the safety controller's API-server freeze): a blind
	// observer must not declare Machines Failed nor create VMs. Nil: never frozen.
	Gate Gate
	// Limits bounds the creates and deletes in flight per MachineClass and
	// counts them for the class controller; nil: SetupWithManager makes
	// one of its own.
	Limits *classlimit.Limiter
	// Fence, with leader election, tells whether this replica still holds
	// its Lease: no VM create or delete starts otherwise (a replica paused
	// past its Lease resumes in the middle of reconciles, while the new
	// leader counts the class limits afresh). Nil: the only replica.
	Fence leaderfence.Fence
	// OnOrphansSuspected, when set, is told the MachineClass of a Machine
	// several VMs claim (GetMachineStatus OutOfRange), so that the orphan
	// collection runs soon instead of at its next period.
	OnOrphansSuspected func(class types.NamespacedName)
	// Views reads the cache's Machines without copies (the health
	// sweep); nil: a List.
	Views *ownerindex.Views

	ledger    replacementLedger
	contract  contractWatches
	failures  failureMemory
	creates   *creates
	written   ownwrites.Record
	tokenless tokenless
	plugins   pluginInfos
}

// Reconcile moves one Machine forward and records where it stands.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := &v1alpha1.Machine{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
			r.leaveQueues(req.NamespacedName, [2]bool{})
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if _, _, ok := r.creates.result(m.UID); ok && !r.creates.startedFrom(m.UID, m.ResourceVersion) {
		// Woken by the end of its create, maybe before the cache has seen
		// the status written when the create started (a queued Machine's,
		// one that had a VM): a status computed from the cache would
		// conflict (see scope.patch). A cache that shows the version the
		// create started from needs no read: the routine create writes
		// nothing before its call, and the status write is locked on the
		// version read, so a newer one the cache missed only makes it
		// conflict and come back here. One read per created Machine fewer.
		if err := r.APIReader.Get(ctx, req.NamespacedName, m); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	} else if r.written.Behind(req.NamespacedName, m.UID, m.ResourceVersion) {
		// The cache has not seen our last write yet; its watch event
		// reconciles the Machine again (see package ownwrites). The requeue is a
		// backstop.
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	s := r.newScope(ctx, m)
	defer func() {
		r.written.Wrote(req.NamespacedName, m.UID, s.replaced, m.ResourceVersion, s.gone && len(m.Finalizers) == 0)
	}()
	defer func() { r.leaveQueues(req.NamespacedName, s.askedSlot) }()
	why, err := r.pausedBy(ctx, m)
	if err != nil {
		return reconcile.Result{}, err
	}
	if why != "" {
		return r.pause(ctx, s, why)
	}
	unpause(s)

	var res reconcile.Result
	if m.DeletionTimestamp.IsZero() {
		res, err = r.reconcileNormal(ctx, s)
		if !r.frozen() {
			// Also after an error: the reconcile may have failed the
			// Machine, and Failed must be written with Preserved.
			pres, perr := r.reconcilePreservation(ctx, s)
			res, err = requeue.Soonest(res, pres), errors.Join(err, perr)
		}
	} else {
		res, err = r.reconcileDelete(ctx, s)
	}
	if apierrors.IsConflict(err) {
		// A write on the version read lost to a newer one (a finalizer
		// another controller added, our own status from the reconcile
		// before): decide again from what is there.
		s.log.V(1).Info("machine changed since it was read; reconciling again", "error", err.Error())
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	if s.gone {
		r.failures.forget(m.UID)
		r.creates.forget(m.UID)
		r.tokenless.forget(m.UID)
		s.emitSucceeded()
		return reconcile.Result{}, err
	}
	leftCreateQueue(s)
	if !s.statusWithCreate { // written with the create's outcome (see driverInfra.create)
		s.machine.Status.Phase = machinefacts.Phase(s.machine)
		s.machine.Status.ObservedGeneration = s.machine.Generation
	}
	if perr := s.patch(ctx); perr != nil {
		if apierrors.IsNotFound(perr) {
			return reconcile.Result{}, nil
		}
		if apierrors.IsConflict(perr) {
			// Read from a cache behind the Machine (see scope.patch): redo
			// once the cache has caught up with the write we lost to.
			s.log.V(1).Info("machine changed since it was read; reconciling again")
			return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
		}
		return reconcile.Result{}, fmt.Errorf("patching machine status: %w", perr)
	}
	if s.createRecorded {
		r.creates.forget(m.UID)
	}
	s.recordPhaseChange()
	s.emitSucceeded()
	return requeue.Result(res, err)
}

// Gate reports whether the manager is frozen, and why.
type Gate interface {
	Frozen() (bool, string)
}

// frozenRequeue is how soon a Machine skipped while frozen is looked at again.
const frozenRequeue = 5 * time.Second

// frozen reports whether the safety controller's gate is closed.
func (r *Reconciler) frozen() bool {
	if r.Gate == nil {
		return false
	}
	frozen, _ := r.Gate.Frozen()
	return frozen
}

func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (reconcile.Result, error) {
	if r.Gate != nil {
		if frozen, why := r.Gate.Frozen(); frozen {
			s.log.V(1).Info("frozen by the safety controller: no transition", "why", why)
			return reconcile.Result{RequeueAfter: frozenRequeue}, nil
		}
	}
	// Persist the finalizer before any VM exists, so a deleted Machine
	// always gets the chance to delete its VM.
	if _, err := s.setFinalizer(ctx, false); err != nil {
		return reconcile.Result{}, err
	}
	if s.machine.Status.FailureReason != "" {
		// Terminal: the owner replaces the Machine; nothing else to do.
		return reconcile.Result{}, nil
	}
	if err := r.lookupHealthChecks(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	remediation, err := r.ownerRemediation(ctx, s)
	if err != nil || s.stop {
		return remediation, err
	}
	if res, err := r.bootstrapConfig(ctx, s); err != nil || s.stop {
		return requeue.Soonest(res, r.checkCreationTimeout(s)), err
	}

	infra, err := r.infrastructureFor(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	if infra == nil { // prerequisites missing; conditions say which
		return r.checkCreationTimeout(s), nil
	}
	res, err := infra.ensure(ctx, s)
	if err != nil || s.stop || !s.infrastructureReady() {
		return requeue.Soonest(res, r.checkCreationTimeout(s)), err
	}

	stepsRes, err := requeue.Run(ctx, s, func() bool { return s.stop },
		r.findNode,
		r.syncNode,
		r.reconcileHealth,
		r.cleanupBootstrapToken,
		r.reconcileInPlace,
		func(ctx context.Context, s *scope) (reconcile.Result, error) {
			if s.machine.Annotations[v1alpha1.InPlaceTargetAnnotation] != "" {
				// The in-place update applies the target class; the hot
				// update of the current one waits until it has ended.
				return reconcile.Result{}, nil
			}
			return infra.update(ctx, s)
		},
	)
	return requeue.Soonest(remediation, requeue.Soonest(res, stepsRes)), err
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) newScope(ctx context.Context, m *v1alpha1.Machine) *scope {
	op := m.Status.LastOperation.Type
	return &scope{
		r:            r,
		machine:      m,
		writer:       patch.New(r.Client, m, patch.WithStatusLock()),
		phase:        m.Status.Phase,
		life:         r.Config.lifecycleOf(m),
		now:          r.now(),
		log:          log.FromContext(ctx),
		createOpRead: op == v1alpha1.OperationCreate || op == v1alpha1.OperationInitialize,
	}
}
