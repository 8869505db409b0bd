package simserver

import (
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/ctrlconfig"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/internal/provider/sim/simmachine"
	"github.com/millwright-dev/millwright/internal/provider/sim/simmachinetemplate"
)

// newInfraManager is a controller-runtime manager running the SimMachine
// controller on s, the very cloud the gRPC driver serves, so faults,
// outages and the admin API apply to SimMachine VMs too, and the
// SimMachineTemplate controller, which fills the templates'
// status.capacity for scale-from-zero. One sim runs per
// cloud, so there is no leader election; metrics stay off, as the sim
// serves none.
func newInfraManager(cfg *rest.Config, s *sim.Sim, workers int, log *slog.Logger) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, infrav1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	logger := logr.FromSlogHandler(log.Handler())
	// controller-runtime's packages log through its global logger.
	ctrl.SetLogger(logger)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Logger:     logger,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller(),
	})
	if err != nil {
		return nil, fmt.Errorf("SimMachine controller: %w", err)
	}
	r := &simmachine.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Driver: s,
		Recorder: mgr.GetEventRecorder("millwright-sim"),
	}
	if err := r.SetupWithManager(mgr, workers); err != nil {
		return nil, fmt.Errorf("SimMachine controller: %w", err)
	}
	// The template controller needs no cloud: a template's capacity
	// follows from its instance type alone.
	tr := &simmachinetemplate.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("millwright-sim")}
	if err := tr.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("SimMachineTemplate controller: %w", err)
	}
	return mgr, nil
}
