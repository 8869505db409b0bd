package manager

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
	"github.com/millwright-dev/millwright/internal/controller/safety"
)

// setupControllers registers the core controllers with mgr. Machines and
// MachineClasses come from mgr (the control cluster), Nodes from target.
//
// The drain reads a Node's pods through targetAPI, which the API server
// filters by spec.nodeName itself: no pod index (drain.PodNodeNameIndex)
// is registered, because indexing would make the cache watch every pod of
// the target cluster.
func setupControllers(ctx context.Context, mgr ctrl.Manager, target cluster.Cluster, targetAPI client.Client, ds *drivers, o *Options) error {
	sc, err := newSafety(mgr, target, ds, o)
	if err != nil {
		return err
	}
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

		OnOrphansSuspected: sc.OrphansSuspected,
	}
	if err := r.SetupWithManager(ctx, mgr, target, o.Workers.Machine); err != nil {
		return fmt.Errorf("machine controller: %w", err)
	}
	if err := machine.RegisterPhaseMetrics(mgr.GetClient()); err != nil {
		return fmt.Errorf("machine metrics: %w", err)
	}
	ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller")}
	if err := ms.SetupWithManager(ctx, mgr, o.Workers.MachineSet); err != nil {
		return fmt.Errorf("machineset controller: %w", err)
	}
	md := &machinedeployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("machinedeployment-controller")}
	if err := md.SetupWithManager(ctx, mgr, o.Workers.MachineDeployment); err != nil {
		return fmt.Errorf("machinedeployment controller: %w", err)
	}
	if err := sc.SetupWithManager(ctx, mgr, target); err != nil {
		return fmt.Errorf("safety controller: %w", err)
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
