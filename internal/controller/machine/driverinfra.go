package machine

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/controller/classsecret"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/driverpolicy"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// createWaitRequeue is a backstop for a deletion waiting for a create in
// flight; the end of the call enqueues the Machine anyway.
const createWaitRequeue = 5 * time.Second

// driverInfra makes VMs through a driver, following the retry table of
// package driver.
type driverInfra struct {
	r     *Reconciler
	class *v1alpha1.MachineClass
	drv   driver.Driver
}

func (d *driverInfra) ensure(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.infrastructureReady() && s.machine.Spec.ProviderID != "" && !creationTimedOut(s) {
		if nodeTellsHealth(s.machine) {
			return reconcile.Result{}, nil // steady state: its Node tells its health
		}
		return d.checkProvisioned(ctx, s)
	}
	// (At the creation timeout one GetMachineStatus more: the failure
	// quotes what the VM said of its boot, its Progress.)
	if d.r.creates.inFlight(s.machine.UID) {
		s.statusWithCreate = s.machine.Spec.ProviderID == "" // see create
		return reconcile.Result{}, nil                       // its end enqueues the Machine
	}
	if resp, err, ok := d.r.creates.result(s.machine.UID); ok {
		s.createRecorded = true
		return d.created(ctx, s, resp, err)
	}
	if wait := d.r.retryWait(s); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if d.r.classFull(s, d.class) {
		return reconcile.Result{RequeueAfter: classQueueRequeue}, nil // still queued
	}
	secret, err := d.r.driverSecret(ctx, s, d.class)
	if err != nil || secret == nil {
		return reconcile.Result{}, err
	}

	var status *driver.GetMachineStatusResponse
	err = d.call(ctx, driver.MethodGetMachineStatus, func(ctx context.Context) (err error) {
		status, err = d.drv.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: s.machine, MachineClass: d.class, Secret: secret})
		return err
	})
	switch outcome := driverpolicy.ClassifyError(driver.MethodGetMachineStatus, err); outcome.Action {
	case driverpolicy.Continue:
		s.vmProgress = status.Progress
		d.recordVM(ctx, s, status.ProviderID, status.NodeName, status.Addresses, status.NodeLabels, s.machine.Status.LastKnownState)
		return d.provisioned(s), nil
	case driverpolicy.CreateVM:
		if vmLost(s, err) {
			return reconcile.Result{}, nil
		}
		return d.create(ctx, s, secret)
	case driverpolicy.InitializeVM:
		return d.initialize(ctx, s, secret)
	default:
		if outcome.Action == driverpolicy.CollectOrphans && d.r.OnOrphansSuspected != nil {
			d.r.OnOrphansSuspected(types.NamespacedName{Namespace: d.class.Namespace, Name: d.class.Name})
		}
		return d.r.failed(s, v1alpha1.OperationCreate, driver.MethodGetMachineStatus, err), nil
	}
}

// checkProvisioned looks for the VM of a Machine that has one but no Node
// yet, every HealthResync until the Node is Ready: nothing else would see
// the VM vanish before the creation timeout (a Running Machine's Node
// tells). The first look is one HealthResync after the VM was made, not
// at once: a cloud's API may not list a VM it has just made. Only
// NotFound acts (see vmLost); any other answer waits for the next check,
// since the VM was made and nothing needs doing.
func (d *driverInfra) checkProvisioned(ctx context.Context, s *scope) (reconcile.Result, error) {
	next := reconcile.Result{RequeueAfter: d.r.Config.HealthResync}
	if since := s.now.Sub(s.condition(v1alpha1.InfrastructureReadyCondition).LastTransitionTime.Time); since < d.r.Config.HealthResync {
		return requeue.Deadline(d.r.Config.HealthResync - since), nil
	}
	secret, err := classsecret.Read(ctx, d.r.APIReader, d.class)
	if err != nil {
		s.log.V(1).Info("cannot check the VM of a Machine waiting for its Node", "error", err.Error())
		return next, nil
	}
	err = d.call(ctx, driver.MethodGetMachineStatus, func(ctx context.Context) error {
		_, err := d.drv.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: s.machine, MachineClass: d.class, Secret: secret})
		return err
	})
	if vmLost(s, err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		s.log.V(1).Info("checking the VM of a Machine waiting for its Node", "error", err.Error())
	}
	return next, nil
}

// vmLost fails a Machine whose VM the driver no longer finds (NotFound)
// although a create went through (the providerID is recorded), and
// reports whether it did. The retry table's CreateVM for NotFound is about
// a Machine that has no VM yet: making a second one for a Machine whose
// VM vanished would leave its providerID, Node and addresses naming the
// lost one. The Machine's owner replaces it, as for any failed Machine.
func vmLost(s *scope, err error) bool {
	if s.machine.Spec.ProviderID == "" || driver.CodeOf(err) != driver.NotFound {
		return false
	}
	s.fail(FailureVMLost, fmt.Sprintf("the VM %s no longer exists: GetMachineStatus answered NotFound (%s)", s.machine.Spec.ProviderID, driver.MessageOf(err)))
	return true
}

// create starts the CreateMachine call (see creates) and returns; the
// Machine is reconciled again when the call ends.
//
// A Machine without a providerID writes nothing before its create: "no
// providerID" already tells the orphan collection that a VM may be on its
// way (machinefacts.CreateMayBeInFlight), and the status is written once,
// with the create's outcome (docs/machine-phases.md, "Writes on the way to
// Running"). What the write used to give besides — a reconcile that read
// a cache behind this controller's own last write starts no create — a
// read of the Machine from the API server gives (createsFromCurrent). A
// Machine that has a
// providerID (a VM it lost, the driver cannot tell) still records
// InfrastructureReady=False/Creating first: for the orphan collection its
// recorded VM and the new one are both its own while the create runs.
//
// The create takes a slot of the class's spec.maxConcurrentCreates first
// (see takeSlot), given back when the call ends; a Machine refused one is
// queued, says so, and is woken when a slot is free. A Machine whose
// status said it was queued writes that its create started: one write
// more, for the Machines that waited only.
func (d *driverInfra) create(ctx context.Context, s *scope, secret *corev1.Secret) (reconcile.Result, error) {
	if s.machine.Spec.ProviderID == "" {
		current, err := d.r.createsFromCurrent(ctx, s)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !current {
			return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
		}
	}
	queued := s.isTrue(v1alpha1.CreateQueuedCondition)
	if !d.r.takeSlot(s, d.class, classlimit.Create) {
		return reconcile.Result{RequeueAfter: classQueueRequeue}, nil
	}
	// The call ends while later reconciles change s.machine: the slot's
	// names are taken now.
	class, uid := client.ObjectKeyFromObject(d.class), s.machine.UID
	release := func() { d.r.Limits.Release(classlimit.Create, class, uid) }
	if queued {
		s.operation(v1alpha1.OperationCreate, v1alpha1.OperationProcessing, "", "creating the VM (its turn came)")
	}
	// A recorded "class (or driver) not found" must not outlive the start
	// of a create: it tells a deletion that there is no VM (see
	// classMissing). One write more, for Machines that waited for theirs.
	if c := s.condition(v1alpha1.InfrastructureReadyCondition); s.machine.Spec.ProviderID != "" || (c != nil && noCreateSince(c)) {
		s.setCondition(v1alpha1.InfrastructureReadyCondition, metav1.ConditionFalse, ReasonCreating, "creating the VM")
		// Recorded before the call starts; a stale read conflicts here
		// and starts no create.
		if err := s.checkpoint(ctx); err != nil {
			release()
			return reconcile.Result{}, err
		}
	}
	if !d.r.leading(ctx, s, "create") {
		release()
		return reconcile.Result{RequeueAfter: notLeadingRequeue}, nil
	}
	if s.machine.Spec.ProviderID == "" {
		s.statusWithCreate = !queued
	}
	req := &driver.CreateMachineRequest{Machine: s.machine.DeepCopy(), MachineClass: d.class, Secret: secret}
	if !d.r.creates.start(ctx, req.Machine, secret, func(ctx context.Context) (resp *driver.CreateMachineResponse, err error) {
		err = d.call(ctx, driver.MethodCreateMachine, func(ctx context.Context) (err error) {
			resp, err = d.drv.CreateMachine(ctx, req)
			return err
		})
		return resp, err
	}, release) {
		release()
	}
	return reconcile.Result{}, nil
}

// created records the outcome of a finished CreateMachine call and goes
// on to initialize the VM.
func (d *driverInfra) created(ctx context.Context, s *scope, resp *driver.CreateMachineResponse, err error) (reconcile.Result, error) {
	if err != nil {
		return d.r.failed(s, v1alpha1.OperationCreate, driver.MethodCreateMachine, err), nil
	}
	if err := d.recordVM(ctx, s, resp.ProviderID, resp.NodeName, resp.Addresses, resp.NodeLabels, resp.LastKnownState); err != nil {
		return reconcile.Result{}, err
	}
	s.operation(v1alpha1.OperationCreate, v1alpha1.OperationSucceeded, "", "created VM "+resp.ProviderID)
	// The Secret the create was made with, read moments ago: one API
	// read per Machine fewer.
	secret := d.r.creates.secret(s.machine.UID)
	if secret != nil {
		bootstrapReady(s) // as driverSecret found it for the create
	} else if secret, err = d.r.driverSecret(ctx, s, d.class); err != nil || secret == nil {
		return reconcile.Result{}, err
	}
	return d.initialize(ctx, s, secret)
}

func (d *driverInfra) initialize(ctx context.Context, s *scope, secret *corev1.Secret) (reconcile.Result, error) {
	var resp *driver.InitializeMachineResponse
	err := d.call(ctx, driver.MethodInitializeMachine, func(ctx context.Context) (err error) {
		resp, err = d.drv.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: s.machine, MachineClass: d.class, Secret: secret})
		return err
	})
	switch driverpolicy.ClassifyError(driver.MethodInitializeMachine, err).Action {
	case driverpolicy.Continue:
		if err := d.recordVM(ctx, s, resp.ProviderID, resp.NodeName, nil, nil, s.machine.Status.LastKnownState); err != nil {
			return reconcile.Result{}, err
		}
		s.operation(v1alpha1.OperationInitialize, v1alpha1.OperationSucceeded, "", "initialized VM "+s.machine.Spec.ProviderID)
	case driverpolicy.SkipStep:
		// Nothing to initialize (Unimplemented) or nothing found to do it on.
	default:
		return d.r.failed(s, v1alpha1.OperationInitialize, driver.MethodInitializeMachine, err), nil
	}
	return d.provisioned(s), nil
}

func (d *driverInfra) provisioned(s *scope) reconcile.Result {
	d.recordAppliedSpec(s)
	endQueued(s, ReasonCreateStarted, "the VM exists")
	s.setCondition(v1alpha1.InfrastructureReadyCondition, metav1.ConditionTrue, ReasonProvisioned, "VM "+s.machine.Spec.ProviderID+" exists")
	if s.machine.Status.LastOperation.State != v1alpha1.OperationSucceeded {
		s.operation(v1alpha1.OperationCreate, v1alpha1.OperationSucceeded, "", "VM "+s.machine.Spec.ProviderID+" exists; waiting for its Node")
	}
	return reconcile.Result{}
}

// recordVM stores what the driver reported. The providerID is written to
// the spec at once: it is how every later step finds the VM again. The
// driver's Node labels ride along with it (see recordNodeLabels).
func (d *driverInfra) recordVM(ctx context.Context, s *scope, providerID, nodeName string, addrs []v1alpha1.MachineAddress, nodeLabels map[string]string, lastKnownState string) error {
	m := s.machine
	recordNodeLabels(s, nodeLabels)
	if providerID != "" && m.Spec.ProviderID == "" {
		m.Spec.ProviderID = providerID
		d.recordAppliedSpec(s) // rides along with the providerID: one write
		if err := s.patchObject(ctx); err != nil {
			return fmt.Errorf("recording providerID %s: %w", providerID, err)
		}
	}
	if nodeName != "" {
		m.Status.NodeName = nodeName
	}
	if len(addrs) > 0 {
		m.Status.Addresses = addrs
	}
	m.Status.LastKnownState = lastKnownState
	return nil
}

func (d *driverInfra) update(ctx context.Context, s *scope) (reconcile.Result, error) {
	return d.r.hotUpdate(ctx, s, d)
}

func (d *driverInfra) delete(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	// A create still running could make a VM after DeleteMachine found
	// none: wait for it, and record the VM it made.
	if d.r.creates.inFlight(s.machine.UID) {
		return false, reconcile.Result{RequeueAfter: createWaitRequeue}, nil
	}
	if resp, err, ok := d.r.creates.result(s.machine.UID); ok && err == nil {
		s.createRecorded = true
		if err := d.recordVM(ctx, s, resp.ProviderID, resp.NodeName, resp.Addresses, resp.NodeLabels, resp.LastKnownState); err != nil {
			return false, reconcile.Result{}, err
		}
	}
	// A slot of the class's spec.maxConcurrentDeletes, held for the call
	// only (it is made in this reconcile).
	if !d.r.takeSlot(s, d.class, classlimit.Delete) {
		return false, reconcile.Result{RequeueAfter: classQueueRequeue}, nil
	}
	defer d.r.Limits.Release(classlimit.Delete, client.ObjectKeyFromObject(d.class), s.machine.UID)
	secret, err := classsecret.Read(ctx, d.r.APIReader, d.class)
	if err != nil {
		return false, reconcile.Result{}, err
	}
	if !d.r.leading(ctx, s, "delete") {
		return false, reconcile.Result{RequeueAfter: notLeadingRequeue}, nil
	}
	var resp *driver.DeleteMachineResponse
	err = d.call(ctx, driver.MethodDeleteMachine, func(ctx context.Context) (err error) {
		resp, err = d.drv.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: s.machine, MachineClass: d.class, Secret: secret})
		return err
	})
	if driverpolicy.ClassifyError(driver.MethodDeleteMachine, err).Action == driverpolicy.Continue {
		if resp != nil {
			s.machine.Status.LastKnownState = resp.LastKnownState
		}
		return true, reconcile.Result{}, nil
	}
	// Never give up on a VM that may still exist: retry, slowly if a
	// person must fix something, and say why in the status.
	return false, d.r.failed(s, v1alpha1.OperationDelete, driver.MethodDeleteMachine, err), nil
}

func (d *driverInfra) volumeIDs(ctx context.Context, specs []*corev1.PersistentVolumeSpec) ([]string, error) {
	var resp *driver.GetVolumeIDsResponse
	err := d.call(ctx, driver.MethodGetVolumeIDs, func(ctx context.Context) (err error) {
		resp, err = d.drv.GetVolumeIDs(ctx, &driver.GetVolumeIDsRequest{PVSpecs: specs})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.VolumeIDs, nil
}

// call makes one driver call with the call timeout and records its metrics.
func (d *driverInfra) call(ctx context.Context, method driver.Method, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d.r.Config.DriverCallTimeout)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	observeDriverCall(d.class.Spec.Provider, method, driver.CodeOf(err), time.Since(start))
	return err
}

// recordAppliedSpec notes, on a VM made from the class's current
// providerSpec, which spec that was, for the hot update.
func (d *driverInfra) recordAppliedSpec(s *scope) {
	if _, ok := s.machine.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation]; ok {
		return
	}
	if s.machine.Annotations == nil {
		s.machine.Annotations = map[string]string{}
	}
	s.machine.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation] = string(d.class.Spec.ProviderSpec.Raw)
}

// recordNodeLabels puts the Node labels a driver reported (e.g. the
// capacity type) on the Machine's labels, where users select Machines by
// them and from where syncNode puts them on the Node (see
// desiredNodeState). Only keys under driver.NodeLabelPrefix are taken: a
// driver must not set roles or labels the kubelet, the scheduler or
// other controllers own (docs/writing-a-driver.md); the others are
// dropped and logged. Labels are only added or changed, never removed: a
// VM's facts do not change, and a driver that says nothing this time
// (an older version, a call that could not tell) must not erase them.
func recordNodeLabels(s *scope, labels map[string]string) {
	allowed, refused := driver.AllowedNodeLabels(labels)
	if len(refused) > 0 {
		s.log.Info("the driver reported Node labels it may not set; they are ignored (docs/writing-a-driver.md)", "refused", refused)
	}
	if len(allowed) == 0 {
		return
	}
	m := s.machine
	if m.Labels == nil {
		m.Labels = make(map[string]string, len(allowed))
	}
	maps.Copy(m.Labels, allowed)
}
