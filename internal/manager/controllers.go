package manager

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/machineclass"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/machinehealthcheck"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/safety"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/leaderfence"
	"github.com/millwright-dev/millwright/internal/provider/tokenbootstrap"
)

// setupControllers registers the core controllers with mgr. Machines and
// MachineClasses come from mgr (the control cluster), Nodes from target.
//
// The drain reads a Node's pods through targetAPI, which the API server
// filters by spec.nodeName itself: no pod index (drain.PodNodeNameIndex)
// is registered, because indexing would make the cache watch every pod of
// the target cluster.
func setupControllers(ctx context.Context, mgr ctrl.Manager, target cluster.Cluster, targetAPI client.Client, ds *drivers, o *Options, views *ownerindex.Views, fence *leaderfence.Lock) error {
	sc, err := newSafety(mgr, target, ds, o)
	if err != nil {
		return err
	}
	sc.Views = views
	sc.Fence = fence
	// The creates and deletes per class: bounded by the machine
	// controller, published by the class controller.
	limits := classlimit.New()
	r := &machine.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Target:    target.GetClient(),
		TargetAPI: targetAPI,
		Drivers:   ds.byName,
		Namespace: o.Namespace,
		Config:    o.Machine,
		Recorder:  mgr.GetEventRecorder("machine-controller"),
		Gate:      sc.Gate(),
		Limits:    limits,
		Fence:     fence,
		Views:     views,

		OnOrphansSuspected: sc.OrphansSuspected,
	}
	if err := r.SetupWithManager(ctx, mgr, target, o.Workers.Machine); err != nil {
		return fmt.Errorf("machine controller: %w", err)
	}
	if err := machine.RegisterPhaseMetrics(ctx, mgr.GetCache()); err != nil {
		return fmt.Errorf("machine metrics: %w", err)
	}
	// One gate for every voluntary disruption (docs/disruption-budgets.md).
	gate := &disruption.Gate{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("disruption-gate")}
	ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller"), Gate: gate, Views: views}
	if err := ms.SetupWithManager(ctx, mgr, o.Workers.MachineSet); err != nil {
		return fmt.Errorf("machineset controller: %w", err)
	}
	md := &machinedeployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Nodes: target.GetClient(),
		Recorder: mgr.GetEventRecorder("machinedeployment-controller"), Gate: gate, Views: views}
	if err := md.SetupWithManager(ctx, mgr, o.Workers.MachineDeployment); err != nil {
		return fmt.Errorf("machinedeployment controller: %w", err)
	}
	if err := machinedeployment.RegisterMetrics(mgr.GetClient()); err != nil {
		return fmt.Errorf("machinedeployment metrics: %w", err)
	}
	mhc := &machinehealthcheck.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Target:    target.GetClient(),
		Recorder:  mgr.GetEventRecorder("machinehealthcheck-controller"),
		Gate:      gate,
		Views:     views,
	}
	if err := mhc.SetupWithManager(mgr, target, machineHealthCheckWorkers); err != nil {
		return fmt.Errorf("machinehealthcheck controller: %w", err)
	}
	mdb := &machinedisruptionbudget.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Views: views}
	if err := mdb.SetupWithManager(mgr, machineDisruptionBudgetWorkers); err != nil {
		return fmt.Errorf("machinedisruptionbudget controller: %w", err)
	}
	if err := sc.SetupWithManager(ctx, mgr, target); err != nil {
		return fmt.Errorf("safety controller: %w", err)
	}
	mc := &machineclass.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("machineclass-controller"),
		Views:     views,
		Providers: func(p string) bool { _, ok := ds.byName[p]; return ok },

		Provisioning: limits,
	}
	if err := mc.SetupWithManager(ctx, mgr, machineClassWorkers); err != nil {
		return fmt.Errorf("machineclass controller: %w", err)
	}
	return setupTokenBootstrap(mgr, target, targetAPI, o)
}

// machineClassWorkers are the MachineClass controller's concurrent
// reconciles: three indexed cache reads each, when a class's users come
// and go.
const machineClassWorkers = 2

// machineHealthCheckWorkers are the health check controller's concurrent
// reconciles: few health checks, each judging many Machines from the cache.
const machineHealthCheckWorkers = 2

// machineDisruptionBudgetWorkers are the budget controller's concurrent
// reconciles: few budgets, each a count over the namespace's cached Machines.
const machineDisruptionBudgetWorkers = 2

// tokenBootstrapWorkers are the TokenBootstrapConfig controller's
// concurrent reconciles: a few API calls each, and only at Machine
// creation, join and deletion (and every half token TTL in between).
const tokenBootstrapWorkers = 5

// setupTokenBootstrap registers the token bootstrap provider's controller
// (--token-bootstrap-provider), and its kinds with the manager's scheme
// (nothing else in the manager reads them typed: the machine controller
// reads provider objects unstructured). Its CRDs must be installed: a
// missing kind would otherwise only show as a controller that never syncs.
func setupTokenBootstrap(mgr ctrl.Manager, target cluster.Cluster, targetAPI client.Client, o *Options) error {
	if !o.TokenBootstrap.Enabled {
		return nil
	}
	if err := bootstrapv1.AddToScheme(mgr.GetScheme()); err != nil {
		return err
	}
	gk := schema.GroupKind{Group: bootstrapv1.GroupName, Kind: tokenbootstrap.Kind}
	if _, err := mgr.GetRESTMapper().RESTMapping(gk); err != nil {
		return fmt.Errorf("token bootstrap provider: kind %s: %w (install config/crd, or pass --token-bootstrap-provider=false)", gk, err)
	}
	defaults, err := tokenbootstrap.DefaultsFor(target.GetConfig(), o.TokenBootstrap.APIServer)
	if err != nil {
		return fmt.Errorf("token bootstrap provider: %w", err)
	}
	tb := &tokenbootstrap.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Target:    targetAPI,
		Defaults:  defaults,
		Recorder:  mgr.GetEventRecorder("tokenbootstrapconfig-controller"),
	}
	if err := tb.SetupWithManager(mgr, tokenBootstrapWorkers); err != nil {
		return fmt.Errorf("tokenbootstrapconfig controller: %w", err)
	}
	return nil
}

// newSafety makes the safety controller from the flags; it probes the
// control and the target API server (once when they are the same).
func newSafety(mgr ctrl.Manager, target cluster.Cluster, ds *drivers, o *Options) (*safety.Controller, error) {
	cfg := safety.DefaultConfig()
	cfg.OrphanVMsPeriod = o.Safety.OrphanVMsPeriod
	cfg.OrphanConfirmAfter = min(cfg.OrphanConfirmAfter, o.Safety.OrphanVMsPeriod)
	cfg.APIServerCheckPeriod = o.Safety.APIServerCheckPeriod
	cfg.APIServerCheckTimeout = o.Safety.APIServerCheckTimeout
	cfg.SafetyUp, cfg.SafetyDown = o.Safety.SafetyUp, o.Safety.SafetyDown
	cfg.OvershootingPeriod = o.Safety.OvershootingPeriod
	cfg.StaleNodeAfter = o.Machine.CreationTimeout
	cfg.DriverCallTimeout = o.Machine.DriverCallTimeout
	cfg.BackoffBase, cfg.BackoffCap = o.Machine.BackoffBase, o.Machine.BackoffCap
	cfg.Namespace = o.Namespace

	control, err := safety.ReadyzProbe("control", mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	probes := []safety.Probe{control}
	if o.TargetKubeconfig != "" {
		t, err := safety.ReadyzProbe("target", target.GetConfig())
		if err != nil {
			return nil, err
		}
		probes = append(probes, t)
	}
	return safety.New(cfg, ds.byName, probes), nil
}
