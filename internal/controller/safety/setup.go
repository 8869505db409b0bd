package safety

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/leaderfence"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// Controller is the safety controller: the orphan collection, the
// overshoot and API-server freezes and the stale Node report. It outlives
// a manager, so the machine controller can be handed its Gate and
// OrphansSuspected before anything runs.
type Controller struct {
	// Config holds every period and threshold.
	Config Config
	// Drivers maps a MachineClass spec.provider to its driver.
	Drivers map[string]driver.Driver
	// Probes are the API servers whose silence freezes the manager.
	Probes []Probe
	// Views reads the Machines the overshoot check counts and the orphan
	// collection matches as the cache's own objects (ownerindex.Views).
	// Nil reads them with a List.
	Views *ownerindex.Views
	// Fence, with leader election, tells whether this replica still holds
	// its Lease; the orphan collection deletes no VM otherwise. Nil: the
	// only replica.
	Fence leaderfence.Fence

	freeze  Freeze
	orphans OrphanCollector
}

// New returns a safety controller; SetupWithManager starts it with a manager.
func New(cfg Config, drivers map[string]driver.Driver, probes []Probe) *Controller {
	return &Controller{Config: cfg, Drivers: drivers, Probes: probes}
}

// Gate is the freeze the machine controller consults (machine.Reconciler.Gate).
func (c *Controller) Gate() *Freeze { return &c.freeze }

// OrphansSuspected is the machine controller's hook
// (machine.Reconciler.OnOrphansSuspected): it runs a collection pass soon.
func (c *Controller) OrphansSuspected(class types.NamespacedName) { c.orphans.SuspectOrphans(class) }

// Orphans is the orphan VM collector, for tests and diagnostics.
func (c *Controller) Orphans() *OrphanCollector { return &c.orphans }

// SetupWithManager registers every part with mgr; Nodes come from target.
func (c *Controller) SetupWithManager(ctx context.Context, mgr ctrl.Manager, target cluster.Cluster) error {
	rec := mgr.GetEventRecorder("safety-controller")
	c.orphans.Client = mgr.GetClient()
	c.orphans.APIReader = mgr.GetAPIReader()
	c.orphans.Cache = mgr.GetCache()
	c.orphans.Views = c.Views
	c.orphans.Drivers = c.Drivers
	c.orphans.Recorder = rec
	c.orphans.Config = c.Config
	c.orphans.Fence = c.Fence
	if err := mgr.Add(&c.orphans); err != nil {
		return err
	}
	over := &overshoot{client: mgr.GetClient(), views: c.Views, recorder: rec, cfg: c.Config,
		counts: newMachineCounts(c.Config.OvershootingPeriod, time.Now)}
	if err := over.setup(ctx, mgr); err != nil {
		return err
	}
	stale := &staleNodes{machines: mgr.GetClient(), nodes: target.GetClient(),
		recorder: target.GetEventRecorder("safety-controller"), cfg: c.Config, now: time.Now}
	if err := stale.setup(mgr, target); err != nil {
		return err
	}
	if len(c.Probes) > 0 {
		mon := &APIServerMonitor{Probes: c.Probes, Freeze: &c.freeze, Client: mgr.GetClient(), Recorder: rec, Config: c.Config, Elected: mgr.Elected()}
		if err := mgr.Add(mon); err != nil {
			return err
		}
	}
	return nil
}
