package manager

import (
	"errors"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/ctrlconfig"
	"github.com/millwright-dev/millwright/internal/leaderfence"
)

// managerOptions maps the flags onto controller-runtime's options; the
// cache hands its informers to views. lock, when leader election is on,
// is the Lease lock (see leaderLock).
func (o *Options) managerOptions(scheme *runtime.Scheme, views *ownerindex.Views, lock *leaderfence.Lock) ctrl.Options {
	le := o.LeaderElection
	opts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		PprofBindAddress:              o.PprofBindAddress,
		GracefulShutdownTimeout:       &o.GracefulShutdownTimeout,
		LeaderElection:                le.Enabled,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionNamespace:       o.leaseNamespace(),
		LeaderElectionID:              le.ID,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &le.LeaseDuration,
		RenewDeadline:                 &le.RenewDeadline,
		RetryPeriod:                   &le.RetryPeriod,
		Controller:                    ctrlconfig.Controller(),
		MapperProvider:                newRESTMapper,
	}
	if lock != nil {
		opts.LeaderElectionResourceLockInterface = lock
	}
	// No controller reads managedFields, nor most of a Node's status:
	// dropping them from the cache saves a good part of its memory.
	opts.Cache = cache.Options{DefaultTransform: cacheTransform, NewInformer: views.NewInformer}
	if o.Namespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	return opts
}

// serviceAccountNamespace is where a pod finds its namespace; it is where
// controller-runtime puts the Lease when no namespace is given.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func inCluster() bool {
	_, err := os.Stat(serviceAccountNamespace)
	return err == nil
}

// checkLeaseNamespace refuses leader election with no namespace for the
// Lease outside a pod, where controller-runtime's own error would not
// name the flags to set.
func (o *Options) checkLeaseNamespace(inCluster bool) error {
	le := o.LeaderElection
	if le.Enabled && le.Namespace == "" && o.Namespace == "" && !inCluster {
		return &cli.UsageError{Err: errors.New("--leader-elect outside a cluster needs --leader-elect-namespace (or --namespace): there is no pod namespace to hold the Lease")}
	}
	return nil
}
