package manager

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
)

const userAgent = "millwright-manager"

// Run runs the manager until ctx ends: it connects the drivers, sets up the
// controllers, probes and metrics, and starts controller-runtime, which on
// cancellation lets reconciles in flight finish and releases the Lease.
// o must have passed Validate. The error says what failed in terms of the
// flags; Run never exits the process itself.
func Run(ctx context.Context, o *Options) error {
	log := ctrl.Log.WithName("setup")
	limit, err := resolveMemoryLimit(o.MemoryLimit, os.Getenv("GOMEMLIMIT"), cgroupMemoryFiles)
	if err != nil {
		// auto is best effort: an unreadable cgroup file is no reason not to run.
		log.Error(err, "reading the container's memory limit; no soft memory limit")
	}
	limit.apply()
	log.Info("soft memory limit", "bytes", limit.bytes, "from", limit.source)
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	controlCfg, targetCfg, err := o.restConfigs()
	if err != nil {
		return err
	}
	targetAPI, err := client.New(targetCfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("target cluster client: %w", err)
	}
	if err := o.checkLeaseNamespace(inCluster()); err != nil {
		return err
	}
	ds, err := o.connectDrivers(ctx, log, targetAPI)
	if err != nil {
		return err
	}
	defer ds.Close()

	views := &ownerindex.Views{}
	fence, err := o.leaderLock(ctx, controlCfg)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(controlCfg, o.managerOptions(scheme, views, fence))
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	var target cluster.Cluster = mgr
	if o.TargetKubeconfig != "" {
		if target, err = cluster.New(targetCfg, func(co *cluster.Options) {
			co.Scheme = scheme
			co.Cache.DefaultTransform = cacheTransform
		}); err != nil {
			return fmt.Errorf("target cluster: %w", err)
		}
		if err := mgr.Add(target); err != nil {
			return err
		}
	}
	for _, s := range ds.sims {
		if err := mgr.Add(alwaysRunnable(s.Start)); err != nil {
			return err
		}
	}
	if err := setupControllers(ctx, mgr, target, targetAPI, ds, o, views, fence); err != nil {
		return err
	}
	if err := o.addProbes(mgr, target, ds); err != nil {
		return err
	}
	log.Info("starting manager", "namespace", o.Namespace, "drivers", len(o.Drivers),
		"separateTarget", o.TargetKubeconfig != "", "leaderElection", o.LeaderElection.Enabled)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	log.Info("manager stopped")
	return nil
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// restConfigs loads the control cluster's config and the target's, which
// is the control cluster's unless --target-kubeconfig is set.
func (o *Options) restConfigs() (control, target *rest.Config, err error) {
	path := o.ControlKubeconfig
	if path == "" {
		path = o.Kubeconfig
	}
	if control, err = cli.RestConfig(path, o.KubeAPIQPS, o.KubeAPIBurst, userAgent); err != nil {
		return nil, nil, fmt.Errorf("control cluster: %w", err)
	}
	if o.TargetKubeconfig == "" {
		return control, rest.CopyConfig(control), nil
	}
	if target, err = cli.RestConfig(o.TargetKubeconfig, o.KubeAPIQPS, o.KubeAPIBurst, userAgent); err != nil {
		return nil, nil, fmt.Errorf("target cluster: %w", err)
	}
	return control, target, nil
}

// alwaysRunnable runs on every replica, leader or not: an in-process sim
// is this replica's own cloud and keeps its Nodes alive regardless.
type alwaysRunnable func(context.Context) error

func (f alwaysRunnable) Start(ctx context.Context) error { return f(ctx) }

func (alwaysRunnable) NeedLeaderElection() bool { return false }

// addProbes adds /healthz (the process answers) and /readyz: the caches
// have synced and every driver answers GetPluginInfo.
func (o *Options) addProbes(mgr ctrl.Manager, target cluster.Cluster, ds *drivers) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("control-cache", cacheSynced(mgr.GetCache())); err != nil {
		return err
	}
	if o.TargetKubeconfig != "" {
		if err := mgr.AddReadyzCheck("target-cache", cacheSynced(target.GetCache())); err != nil {
			return err
		}
	}
	for _, spec := range o.Drivers {
		if err := mgr.AddReadyzCheck("driver-"+spec.Name, driverAnswers(ds.byName[spec.Name], o.DriverProbeTimeout)); err != nil {
			return err
		}
	}
	return nil
}
