package safety

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
)

// Probe checks that one API server answers.
type Probe struct {
	// Name says which API server ("control", "target") in logs and reasons.
	Name string
	// Check returns nil when the API server answered.
	Check func(ctx context.Context) error
}

// ReadyzProbe probes the API server of cfg with GET /readyz, which every
// authenticated client may read.
func ReadyzProbe(name string, cfg *rest.Config) (Probe, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return Probe{}, fmt.Errorf("%s API server probe: %w", name, err)
	}
	return Probe{Name: name, Check: func(ctx context.Context) error {
		return dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}}, nil
}

// APIServerMonitor probes the API servers and freezes the manager while any
// does not answer. A machine controller blind to Nodes would otherwise
// declare healthy Machines Failed and replace the whole fleet.
type APIServerMonitor struct {
	// Probes are the API servers to watch.
	Probes []Probe
	// Freeze is set while a probe fails.
	Freeze *Freeze
	// Client patches Machines when the freeze lifts (the control cluster).
	Client client.Client
	// Recorder emits Events about the freeze, on the Machines it touches.
	Recorder events.EventRecorder
	// Config holds the period and the probe timeout.
	Config Config
	// Elected is closed once this replica leads (mgr.Elected()); nil means
	// it always does.
	Elected <-chan struct{}

	blind time.Time // when the freeze began; touched only by Start
}

// NeedLeaderElection: every replica probes, so a newly elected leader
// starts with a true picture.
func (m *APIServerMonitor) NeedLeaderElection() bool { return false }

// Start probes every period until ctx ends.
func (m *APIServerMonitor) Start(ctx context.Context) error {
	lg := log.FromContext(ctx).WithName("safety").WithName("apiservers")
	tick := time.NewTicker(m.Config.APIServerCheckPeriod)
	defer tick.Stop()
	for {
		m.check(ctx, lg)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (m *APIServerMonitor) check(ctx context.Context, lg logr.Logger) {
	var failed []string
	for _, p := range m.Probes {
		pctx, cancel := context.WithTimeout(ctx, m.Config.APIServerCheckTimeout)
		err := p.Check(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			failed = append(failed, fmt.Sprintf("the %s API server is unreachable: %v", p.Name, err))
		}
	}
	frozen, _ := m.Freeze.Frozen()
	switch {
	case len(failed) > 0:
		why := failed[0]
		for _, f := range failed[1:] {
			why += "; " + f
		}
		if !frozen {
			m.blind = time.Now()
			lg.Info("FROZEN: no Machine transitions until the API servers answer again", "why", why)
			m.announce(ctx, corev1.EventTypeWarning, "ManagerFrozen", "no Machine changes phase, no VM is created: "+why)
		}
		m.Freeze.set("apiservers", why)
	case frozen:
		// Before unfreezing, restart the health timers: while blind, the
		// Nodes' silence says nothing about the Machines.
		n, err := m.restartHealthTimers(ctx)
		if err != nil {
			lg.Error(err, "API servers answer again, but the health timers could not be restarted: staying frozen")
			return
		}
		m.Freeze.set("apiservers", "")
		frozenFor := time.Since(m.blind).Round(time.Second).String()
		lg.Info("UNFROZEN: the API servers answer again", "frozenFor", frozenFor, "healthTimersRestarted", n)
		m.announce(ctx, corev1.EventTypeNormal, "ManagerUnfrozen",
			fmt.Sprintf("the API servers answer again after %s; %d health timers restarted", frozenFor, n))
	}
}

// scope limits lists to the managed namespace, if any.
func (m *APIServerMonitor) scope() []client.ListOption {
	if m.Config.Namespace != "" {
		return []client.ListOption{client.InNamespace(m.Config.Namespace)}
	}
	return nil
}

// leading reports whether this replica is the leader (always, without
// leader election): only the leader writes, the others just keep their
// freeze in step.
func (m *APIServerMonitor) leading() bool {
	if m.Elected == nil {
		return true
	}
	select {
	case <-m.Elected:
		return true
	default:
		return false
	}
}

// announce records an Event on every MachineDeployment the manager
// manages, where `kubectl describe` shows it. The list comes from the
// cache, which still answers while the API server does not; the recorder
// retries the Event until the API server takes it.
func (m *APIServerMonitor) announce(ctx context.Context, kind, reason, msg string) {
	if m.Recorder == nil || !m.leading() {
		return
	}
	mds := &v1alpha1.MachineDeploymentList{}
	if err := m.Client.List(ctx, mds, m.scope()...); err != nil {
		return
	}
	for i := range mds.Items {
		m.Recorder.Eventf(&mds.Items[i], nil, kind, reason, "APIServerCheck", "%s", msg)
	}
}

// restartHealthTimers sets status.unhealthySince to now on every Machine
// that has one, so that no Machine is declared Failed because the observer
// was blind.
func (m *APIServerMonitor) restartHealthTimers(ctx context.Context) (int, error) {
	if !m.leading() {
		return 0, nil
	}
	machines := &v1alpha1.MachineList{}
	if err := m.Client.List(ctx, machines, m.scope()...); err != nil {
		return 0, err
	}
	now := metav1.Now()
	n := 0
	for i := range machines.Items {
		mc := &machines.Items[i]
		if mc.Status.UnhealthySince == nil || !mc.DeletionTimestamp.IsZero() {
			continue
		}
		h := patch.New(m.Client, mc)
		mc.Status.UnhealthySince = &now
		if err := h.PatchStatus(ctx, mc); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("machine %s/%s: %w", mc.Namespace, mc.Name, err)
		}
		n++
		if m.Recorder != nil {
			m.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, "HealthTimerRestarted", "Unfreeze",
				"the API servers were unreachable for a while: the health timeout starts again from now")
		}
	}
	return n, nil
}
