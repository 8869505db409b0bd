package safety

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classsecret"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/driverpolicy"
	"github.com/millwright-dev/millwright/internal/leaderfence"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// OrphanCollector deletes VMs no Machine manages. It runs as a manager
// Runnable on its own goroutine: a slow or failing driver delays only the
// collection, never another controller's workers.
type OrphanCollector struct {
	// Client reads MachineClasses and Machines from the cache.
	Client client.Client
	// APIReader reads Secrets, and re-reads a Machine live before its
	// claimed VM is deleted.
	APIReader client.Reader
	// Cache tells the collector about Machine deletions (nil: periods only).
	Cache cache.Informers
	// Views reads a namespace's Machines as the cache's own objects
	// (ownerindex.Views). Nil reads them with a List.
	Views *ownerindex.Views
	// Drivers maps a MachineClass spec.provider to its driver.
	Drivers map[string]driver.Driver
	// Recorder emits Events on MachineClasses.
	Recorder events.EventRecorder
	// Config holds the periods and backoffs.
	Config Config
	// Fence, with leader election, tells whether this replica still holds
	// its Lease (leaderfence); nil: always.
	Fence leaderfence.Fence

	once    sync.Once
	trigger chan struct{}
	// deleted says a Machine was deleted: a pass is due, spaced from the
	// last one by deletionPassGap.
	deleted chan struct{}
	passes  atomic.Int64

	// Touched only by the Start goroutine.
	seen          sightings
	failures      map[string]int
	notBefore     map[string]time.Time
	unimplemented map[string]bool
}

func (c *OrphanCollector) init() {
	c.once.Do(func() {
		c.trigger = make(chan struct{}, 1)
		c.deleted = make(chan struct{}, 1)
		c.seen = sightings{}
		c.failures = map[string]int{}
		c.notBefore = map[string]time.Time{}
		c.unimplemented = map[string]bool{}
	})
}

// Trigger asks for a pass soon; it never blocks.
func (c *OrphanCollector) Trigger() {
	c.init()
	select {
	case c.trigger <- struct{}{}:
	default: // a pass is already asked for
	}
}

// machineDeleted asks for a pass after a Machine's deletion; it never
// blocks.
func (c *OrphanCollector) machineDeleted() {
	select {
	case c.deleted <- struct{}{}:
	default: // a pass is already asked for
	}
}

// deletionPassGap is the least time from the end of a pass to a pass a
// Machine's deletion asks for (but never more than OrphanConfirmAfter).
// A pass lists every VM of every class and reads every Machine of their
// namespaces: run at each deletion, back to back, the passes of a
// 5000-Machine rolling update took a fifth of the manager's CPU
// (docs/benchmarks.md). A VM left by a deleted Machine is seen a few
// seconds later instead, and still deleted only on a second pass.
const deletionPassGap = 5 * time.Second

// SuspectOrphans is the machine controller's hook: several VMs claim a
// Machine of class, so a pass should run now.
func (c *OrphanCollector) SuspectOrphans(class types.NamespacedName) {
	log.Log.WithName("safety").Info("several VMs claim one Machine: running the orphan VM collection", "class", class)
	c.Trigger()
}

// Passes is how many passes have completed, for tests and diagnostics.
func (c *OrphanCollector) Passes() int64 { return c.passes.Load() }

// NeedLeaderElection: only the active replica deletes VMs.
func (c *OrphanCollector) NeedLeaderElection() bool { return true }

// Start runs passes until ctx ends: one at once, then every period, sooner
// after a trigger, new suspects, a retry or a Machine deletion (one pass
// for the deletions of a deletionPassGap).
func (c *OrphanCollector) Start(ctx context.Context) error {
	c.init()
	lg := log.FromContext(ctx).WithName("safety").WithName("orphans")
	if c.Cache != nil {
		inf, err := c.Cache.GetInformer(ctx, &v1alpha1.Machine{})
		if err != nil {
			return err
		}
		// A deleted Machine may have left VMs behind (a lost create response,
		// a second VM): look soon rather than at the next period.
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { c.machineDeleted() }}); err != nil {
			return err
		}
		if !c.Cache.WaitForCacheSync(ctx) {
			return ctx.Err()
		}
	}
	gap := min(deletionPassGap, c.Config.OrphanConfirmAfter)
	// due is when the timer fires; lastEnd when the last pass ended.
	due, lastEnd := time.Now(), time.Time{}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-c.trigger:
		case <-c.deleted:
			if soon := lastEnd.Add(gap); time.Now().Before(soon) {
				if soon.Before(due) {
					due = soon
					timer.Reset(time.Until(due))
				}
				continue
			}
		}
		wait := c.pass(ctx, lg)
		lastEnd = time.Now()
		due = lastEnd.Add(wait)
		timer.Reset(wait)
	}
}

// pass looks at every class once and returns the wait until the next pass.
func (c *OrphanCollector) pass(ctx context.Context, lg logr.Logger) time.Duration {
	defer c.passes.Add(1)
	next := c.Config.OrphanVMsPeriod
	classes := &v1alpha1.MachineClassList{}
	var opts []client.ListOption
	if c.Config.Namespace != "" {
		opts = append(opts, client.InNamespace(c.Config.Namespace))
	}
	if err := c.Client.List(ctx, classes, opts...); err != nil {
		lg.Error(err, "listing MachineClasses")
		return min(next, c.Config.BackoffBase)
	}
	now := time.Now()
	for i := range classes.Items {
		class := &classes.Items[i]
		key := class.Namespace + "/" + class.Name
		if at := c.notBefore[key]; now.Before(at) {
			next = min(next, at.Sub(now))
			continue
		}
		drv := c.Drivers[class.Spec.Provider]
		if drv == nil || c.unimplemented[class.Spec.Provider] || !class.DeletionTimestamp.IsZero() {
			continue // an unknown provider is the machine controller's to report
		}
		switch wait, fresh := c.collectClass(ctx, lg.WithValues("class", key), class, drv); {
		case wait > 0:
			next = min(next, wait)
		case fresh:
			next = min(next, c.Config.OrphanConfirmAfter)
		}
	}
	return next
}

// collectClass lists the VMs of one class, deletes those confirmed orphans,
// and returns a retry wait (0: none) and whether it saw new suspects.
func (c *OrphanCollector) collectClass(ctx context.Context, lg logr.Logger, class *v1alpha1.MachineClass, drv driver.Driver) (time.Duration, bool) {
	key := class.Namespace + "/" + class.Name
	secret, err := classsecret.Read(ctx, c.APIReader, class)
	if err != nil {
		lg.Error(err, "cannot list the class's VMs")
		return c.retry(key, driverpolicy.Retry), false
	}
	ix, err := c.namespaceMachines(ctx, class.Namespace)
	if err != nil {
		lg.Error(err, "listing the Machines of the class's namespace")
		return c.retry(key, driverpolicy.Retry), false
	}
	suspects, wait, listed := c.listSuspects(ctx, lg, class, drv, secret, ix)
	if !listed {
		return wait, false
	}
	delete(c.failures, key)
	var found []orphan
	if len(suspects) > 0 {
		// Judged again against the Machines as they are after the last
		// page: a VM listed after the first read may be one whose Machine
		// was made since (a Machine is made before its VM).
		if ix, err = c.namespaceMachines(ctx, class.Namespace); err != nil {
			lg.Error(err, "listing the Machines of the class's namespace")
			return c.retry(key, driverpolicy.Retry), false
		}
		found = findOrphans(suspects, ix)
	}
	orphansFound.WithLabelValues(class.Spec.Provider).Add(float64(len(found)))
	orphansCollected.WithLabelValues(class.Spec.Provider) // a 0 from the first pass on, for rate() and the dashboard
	confirmed, fresh := c.seen.advance(key, found, time.Now())
	for _, o := range found {
		lg.V(1).Info("suspected orphan VM", "providerID", o.ProviderID, "machine", o.MachineName, "machineUID", o.MachineUID, "why", o.Why)
	}
	for _, o := range confirmed {
		if action, done := c.collect(ctx, lg, class, drv, secret, o); !done {
			return c.retry(key, action), fresh > 0
		}
	}
	return 0, fresh > 0
}

// namespaceMachines indexes the Machines of a namespace: one list of the
// cache's own objects, only read. A cached Get per VM (a copy of each
// Machine and a type lookup) was 28 % of the manager's CPU during a
// rollout at 5000 Machines, and a List's copies 3.9 MiB a class at each
// pass (docs/benchmarks.md).
func (c *OrphanCollector) namespaceMachines(ctx context.Context, namespace string) (namespaceMachines, error) {
	machines, err := ownerindex.InNamespace[*v1alpha1.Machine](ctx, c.Views, c.Client, &v1alpha1.MachineList{}, namespace)
	if err != nil {
		return namespaceMachines{}, err
	}
	return indexMachines(machines), nil
}

// listPageSize is how many VMs a pass asks a driver for at once. A class
// of 5000 VMs listed in one answer held 2.3 MiB of the manager's heap
// while a pass ran, and a rolling update runs one every few seconds
// (deletionPassGap); a page of 500 holds a tenth of that. A variable for
// the tests only.
var listPageSize int32 = 500

// maxListPages bounds the pages of one listing (5 million VMs): a driver
// whose tokens never end must not hold a pass forever.
const maxListPages = 10000

// listSuspects lists the class's VMs a page at a time and keeps those that
// look orphaned against ix, the namespace's Machines read before the first
// page. listed is false when the listing failed, with the wait before the
// next try (0: the driver does not implement ListMachines).
func (c *OrphanCollector) listSuspects(ctx context.Context, lg logr.Logger, class *v1alpha1.MachineClass, drv driver.Driver,
	secret *corev1.Secret, ix namespaceMachines) (suspects []driver.ListedVM, wait time.Duration, listed bool) {
	key := class.Namespace + "/" + class.Name
	req := &driver.ListMachinesRequest{MachineClass: class, Secret: secret, PageSize: listPageSize}
	for pages := 1; ; pages++ {
		var resp *driver.ListMachinesResponse
		err := c.call(ctx, func(ctx context.Context) (err error) {
			resp, err = drv.ListMachines(ctx, req)
			return err
		})
		switch outcome := driverpolicy.ClassifyError(driver.MethodListMachines, err); outcome.Action {
		case driverpolicy.Continue:
		case driverpolicy.SkipStep:
			c.unimplemented[class.Spec.Provider] = true
			lg.Info("the driver does not implement ListMachines: orphan VMs of its classes are not collected", "provider", class.Spec.Provider)
			return nil, 0, false
		default:
			lg.Error(err, "ListMachines failed", "code", driver.CodeOf(err).String(), "recovery", outcome.Recovery, "page", pages)
			return nil, c.retry(key, outcome.Action), false
		}
		for _, vm := range resp.VMs {
			if _, ok := ix.judge(vm); ok {
				suspects = append(suspects, vm)
			}
		}
		switch {
		case resp.NextPageToken == "":
			return suspects, 0, true
		case resp.NextPageToken == req.PageToken || pages == maxListPages:
			lg.Error(nil, "ListMachines pages do not end: the driver answers the same token again or too many pages", "page", pages, "token", resp.NextPageToken)
			return nil, c.retry(key, driverpolicy.RetryLong), false
		}
		req.PageToken = resp.NextPageToken
	}
}

// collect deletes one confirmed orphan after re-reading its Machine live
// (the cache may lag behind a Machine that just recorded this very VM)
// and, when that Machine records another providerID, after the driver
// confirmed that the Machine's VM is another one. done is false when the
// deletion must be retried.
func (c *OrphanCollector) collect(ctx context.Context, lg logr.Logger, class *v1alpha1.MachineClass, drv driver.Driver, secret *corev1.Secret, o orphan) (driverpolicy.Action, bool) {
	key := class.Namespace + "/" + class.Name
	live, err := c.liveMachine(ctx, class.Namespace, o.MachineName)
	if err != nil {
		lg.Error(err, "re-reading the Machine of a suspected orphan VM", "machine", o.MachineName)
		return driverpolicy.Retry, false
	}
	byUID := live
	if live != nil && string(live.UID) != o.MachineUID {
		byUID = nil
	}
	m := claimant(o.ListedVM, byUID, live)
	o, still := judgeVM(o.ListedVM, m, live != nil && live.Spec.ProviderID == o.ProviderID)
	if still && o.askDriver {
		var action driverpolicy.Action
		if still, action = c.confirm(ctx, lg, class, drv, secret, m, &o); action != driverpolicy.Continue {
			return action, false
		}
	}
	if !still {
		c.seen.forget(key, o.ProviderID)
		return driverpolicy.Continue, true
	}
	// A Machine of only a name and the providerID, no UID: the driver
	// deletes the VM that providerID names and no other. With the UID a
	// driver may delete every VM of the Machine (the AWS driver does, at
	// a Machine's deletion), the Machine's own among them when this VM is
	// a second one of a live Machine (docs/writing-a-driver.md, "Orphan
	// VMs").
	target := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: o.MachineName, Namespace: class.Namespace},
		Spec:       v1alpha1.MachineSpec{ProviderID: o.ProviderID},
	}
	// A replica paused past its Lease judged from a view the new leader
	// may have changed since (a VM it just created): the new leader's
	// next pass decides.
	if leaderfence.Lost(c.Fence, "orphan-delete") {
		lg.Info("not deleting a suspected orphan VM: this replica's Lease was not renewed within its renew deadline", "providerID", o.ProviderID)
		return driverpolicy.Retry, false
	}
	err = c.call(ctx, func(ctx context.Context) error {
		_, err := drv.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: target, MachineClass: class, Secret: secret})
		return err
	})
	outcome := driverpolicy.ClassifyError(driver.MethodDeleteMachine, err)
	if outcome.Action != driverpolicy.Continue {
		lg.Error(err, "deleting orphan VM failed", "providerID", o.ProviderID, "code", driver.CodeOf(err).String(), "recovery", outcome.Recovery)
		return outcome.Action, false
	}
	c.seen.forget(key, o.ProviderID)
	orphansCollected.WithLabelValues(class.Spec.Provider).Inc()
	msg := "deleted orphan VM " + o.ProviderID + " (claims Machine " + o.MachineName + "): " + o.Why
	lg.Info("collected orphan VM", "providerID", o.ProviderID, "machine", o.MachineName, "why", o.Why)
	if c.Recorder != nil {
		c.Recorder.Eventf(class, nil, corev1.EventTypeNormal, "OrphanVMCollected", "CollectOrphans", "%s", msg)
	}
	return driverpolicy.Continue, true
}

// liveMachine reads the Machine name of namespace from the API server;
// nil when there is none. A VM listed without a Machine name has no
// Machine to re-read: it is judged by its UID against the cache, as it
// was found.
func (c *OrphanCollector) liveMachine(ctx context.Context, namespace, name string) (*v1alpha1.Machine, error) {
	if name == "" {
		return nil, nil
	}
	m := &v1alpha1.Machine{}
	err := c.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, m)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return m, err
}

// confirm asks the driver which VM is m's (GetMachineStatus, which
// answers by m's recorded providerID first): o is an orphan only when the
// driver names another VM than o. Any other answer keeps the VM: without
// the driver's word a VM claiming a live Machine is never deleted. The
// action is not Continue when the question must be asked again later.
func (c *OrphanCollector) confirm(ctx context.Context, lg logr.Logger, class *v1alpha1.MachineClass, drv driver.Driver, secret *corev1.Secret, m *v1alpha1.Machine, o *orphan) (bool, driverpolicy.Action) {
	var resp *driver.GetMachineStatusResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		resp, err = drv.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m, MachineClass: class, Secret: secret})
		return err
	})
	switch code := driver.CodeOf(err); {
	case err == nil && resp.ProviderID != "" && resp.ProviderID != o.ProviderID:
		o.Why += "; the driver says the Machine's VM is " + resp.ProviderID
		return true, driverpolicy.Continue
	case err == nil:
		lg.Info("a VM listed under another providerID than its Machine records is that Machine's: kept",
			"machine", m.Name, "listed", o.ProviderID, "recorded", m.Spec.ProviderID)
	case driverpolicy.ClassifyError(driver.MethodGetMachineStatus, err).Action == driverpolicy.Retry:
		lg.Error(err, "asking the driver which VM is the Machine's", "machine", m.Name, "code", code.String())
		return false, driverpolicy.Retry
	default:
		lg.Info("the driver cannot tell which VM is the Machine's: a VM claiming it is kept",
			"machine", m.Name, "listed", o.ProviderID, "recorded", m.Spec.ProviderID, "code", code.String(), "message", driver.MessageOf(err))
	}
	return false, driverpolicy.Continue
}

// retry records a failure of class and returns its backoff.
func (c *OrphanCollector) retry(key string, action driverpolicy.Action) time.Duration {
	c.failures[key]++
	base, limit := c.Config.BackoffBase, c.Config.BackoffCap
	if action == driverpolicy.RetryLong || action == driverpolicy.Terminal {
		// A person must fix something, or capacity must free up: slowly.
		base, limit = base*4, limit*4
	}
	wait := min(backoff(c.failures[key], base, limit), c.Config.OrphanVMsPeriod)
	c.notBefore[key] = time.Now().Add(wait)
	return wait
}

// call makes one driver call with the call timeout.
func (c *OrphanCollector) call(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.Config.DriverCallTimeout)
	defer cancel()
	return f(ctx)
}
