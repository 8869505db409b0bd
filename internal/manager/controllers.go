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
)

// setupControllers registers the core controllers with mgr. Machines and
// MachineClasses come from mgr (the control cluster), Nodes from target.
//
// The drain reads a Node's pods through targetAPI, which the API server
// filters by spec.nodeName itself: no pod index (drain.PodNodeNameIndex)
// is registered, because indexing would make the cache watch every pod of
// the target cluster.
func setupControllers(ctx context.Context, mgr ctrl.Manager, target cluster.Cluster, targetAPI client.Client, ds *drivers, o *Options) error {
	r := &machine.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Target:    target.GetClient(),
		TargetAPI: targetAPI,
		Drivers:   ds.byName,
		Namespace: o.Namespace,
		Config:    o.Machine,
		Recorder:  mgr.GetEventRecorder("machine-controller"),
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
	return nil
}
