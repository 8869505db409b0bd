package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Options tunes the agent. The zero value takes the kubelet's defaults.
type Options struct {
	// CertDir receives the node's key, certificate and kubeconfig. In a
	// VM it is on /run, a tmpfs: nothing is written to a disk.
	CertDir string
	// MaxPods is the Node's pods capacity. Default 0: the agent runs no
	// containers, so the scheduler places nothing on it.
	MaxPods int
	// LeaseDuration is the Lease's leaseDurationSeconds (kubelet: 40s);
	// the Lease is renewed every quarter of it, as the kubelet does.
	LeaseDuration time.Duration
	// StatusReportFrequency is how often the Node's status (conditions'
	// lastHeartbeatTime) is posted although nothing changed (kubelet's
	// nodeStatusReportFrequency: 5m). The Lease is the liveness signal.
	StatusReportFrequency time.Duration
	// RetryInterval is the first wait between join attempts in Run,
	// doubled up to a minute (default 2s).
	RetryInterval time.Duration
	// StatePath is the state device (or file) where the agent keeps its
	// credentials, Node name and version across reboots (State); empty:
	// none, so a reboot bootstraps again and in-place updates are refused.
	StatePath string
	// Reboot restarts the machine for an in-place update; default
	// RebootMachine. Only tests replace it.
	Reboot func() error
	// NoCertificateRotation turns off the renewal of the node's client
	// certificate (RotateCertificates), which Run does by default as the
	// kubelet does with --rotate-certificates.
	NoCertificateRotation bool
	// Clock runs the waits of the certificate rotation; default the real
	// clock. Only tests replace it.
	Clock clock.Clock
	// Logf receives progress messages; default: none.
	Logf func(format string, args ...any)
}

func (o *Options) setDefaults() {
	if o.CertDir == "" {
		o.CertDir = "/run/millwright-node-agent"
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 40 * time.Second
	}
	if o.StatusReportFrequency <= 0 {
		o.StatusReportFrequency = 5 * time.Minute
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 2 * time.Second
	}
	if o.Reboot == nil {
		o.Reboot = RebootMachine
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Agent is a joined node: Join made it, Heartbeat keeps it alive.
type Agent struct {
	cfg    JoinConfig
	opts   Options
	client kubernetes.Interface
	// creds is the client certificate client presents; a rotation
	// changes it.
	creds *nodeCredentials
	node  *corev1.Node
	// state is what the state device holds (nil without one); version
	// is the Kubernetes version reported as the kubeletVersion. stateMu
	// makes each change of the record (a rotation's credentials, an
	// update's version) a whole read-modify-write.
	stateMu sync.Mutex
	state   *State
	version string
	// rebooting is set once an update reboots the machine: the Node was
	// told NotReady already, and nothing else is done.
	rebooting atomic.Bool
}

// Run joins, retrying failed attempts with back-off (the API server may
// not be reachable yet, or the CSR not approved), then heartbeats until
// ctx ends. It returns nil after a clean stop. Once a certificate is
// issued, only the registration is retried, with that certificate: the
// bootstrap token may be gone by then.
func Run(ctx context.Context, cfg JoinConfig, opts Options) error {
	opts.setDefaults()
	var a *Agent
	if !retry(ctx, opts, "bootstrap", func() (err error) {
		a, err = bootstrap(ctx, cfg, opts)
		return err
	}) {
		return nil
	}
	if !a.registerUntilStopped(ctx) {
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.WatchUpdates(ctx) })
	if !opts.NoCertificateRotation {
		wg.Go(func() { a.RotateCertificates(ctx) })
	}
	err := a.Heartbeat(ctx)
	wg.Wait()
	return err
}

// registerUntilStopped registers the Node, retrying, and reports whether
// it did before ctx ended. A stop during the registration still tells the
// Node the agent stopped: the status write may have landed (the Node
// Ready) although its answer was lost to the stop.
func (a *Agent) registerUntilStopped(ctx context.Context) bool {
	if retry(ctx, a.opts, "registration", func() error { return a.register(ctx) }) {
		return true
	}
	if a.node != nil {
		a.postStopped(ctx)
	}
	return false
}

// retry runs f until it succeeds (true) or ctx ends (false), waiting
// Options.RetryInterval, doubled up to a minute, between attempts.
func retry(ctx context.Context, opts Options, what string, f func() error) bool {
	backoff := wait.Backoff{Duration: opts.RetryInterval, Factor: 2, Steps: 1 << 30, Cap: time.Minute}
	for {
		err := f()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		d := backoff.Step()
		opts.Logf("%s failed, retrying in %s: %v", what, d, err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
		}
	}
}

// Join bootstraps the node's credentials and registers its Node, once.
func Join(ctx context.Context, cfg JoinConfig, opts Options) (*Agent, error) {
	opts.setDefaults()
	a, err := bootstrap(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := a.register(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// bootstrap gets the node's client certificate and makes the Agent that
// uses it.
func bootstrap(ctx context.Context, cfg JoinConfig, opts Options) (*Agent, error) {
	st, err := restoreState(cfg, opts)
	if err != nil {
		return nil, err
	}
	// A certificate expiring within the hour is not reused (a renewal
	// might not get through in time); one past its rotation deadline is,
	// and RotateCertificates renews it at once.
	rc, err := reuseCredentials(opts.CertDir, cfg, time.Now(), time.Hour)
	if err != nil {
		opts.Logf("not reusing the client certificate in %s: %v", opts.CertDir, err)
	}
	if rc != nil {
		opts.Logf("reusing the client certificate for system:node:%s in %s", cfg.NodeName, opts.CertDir)
	} else {
		begin := time.Now()
		if rc, err = Bootstrap(ctx, cfg, opts.CertDir); err != nil {
			return nil, err
		}
		opts.Logf("client certificate for system:node:%s issued after %s", cfg.NodeName, time.Since(begin).Round(time.Millisecond))
	}
	client, creds, err := newNodeClient(cfg, rc.CertData, rc.KeyData)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, opts: opts, client: client, creds: creds, state: st, version: KubeletVersion()}
	switch {
	case st != nil && st.Version != "":
		a.version = st.Version
	case cfg.Version != "":
		a.version = cfg.Version
	}
	if err := a.saveCredentials(rc.CertData, rc.KeyData); err != nil {
		return nil, err
	}
	return a, nil
}

// register creates the Node as the kubelet does, or adopts the one a
// previous run of the agent created, then posts its status.
func (a *Agent) register(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.cfg.NodeName,
			Labels: map[string]string{
				corev1.LabelHostname:   a.cfg.NodeName,
				corev1.LabelOSStable:   runtime.GOOS,
				corev1.LabelArchStable: runtime.GOARCH,
			},
		},
		Spec: corev1.NodeSpec{ProviderID: a.cfg.ProviderID},
	}
	created, err := a.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	switch {
	case err == nil:
		a.node = created
	case apierrors.IsAlreadyExists(err):
		existing, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if existing.Spec.ProviderID != a.cfg.ProviderID {
			return fmt.Errorf("the Node %s exists with providerID %q, not %q", a.cfg.NodeName, existing.Spec.ProviderID, a.cfg.ProviderID)
		}
		a.node = existing
	default:
		return fmt.Errorf("registering Node %s: %w", a.cfg.NodeName, err)
	}
	if err := a.postStatus(ctx, true, "KubeletReady", "millwright-node-agent is posting ready status (it runs no containers)"); err != nil {
		return err
	}
	a.opts.Logf("Node %s registered (providerID %s)", a.cfg.NodeName, a.cfg.ProviderID)
	return nil
}

// postStatus writes the Node's status: capacity, addresses, node info and
// the kubelet's four conditions, with Ready as given.
func (a *Agent) postStatus(ctx context.Context, ready bool, reason, message string) error {
	capacity, err := capacity(a.opts.MaxPods)
	if err != nil {
		return err
	}
	ip, err := internalIP(a.cfg.Server)
	if err != nil {
		return err
	}
	now := metav1.Now()
	status := func(ok bool) corev1.ConditionStatus {
		if ok {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "no memory pressure"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "no PID pressure"},
		{Type: corev1.NodeReady, Status: status(ready), Reason: reason, Message: message},
	}
	node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for i := range conditions {
		c := &conditions[i]
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		for _, old := range node.Status.Conditions {
			if old.Type == c.Type && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	// A strategic merge patch of the status alone, as the kubelet sends:
	// an update would carry the whole Node, and NodeRestriction refuses
	// one whose taints differ from the stored ones, which they do when
	// the node lifecycle controller tainted the Node since the Get.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"capacity":    capacity,
		"allocatable": capacity,
		"addresses":   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: a.cfg.NodeName}},
		"nodeInfo":    nodeInfo(a.cfg.InstanceID, a.version),
		"conditions":  conditions,
	}})
	if err != nil {
		return err
	}
	_, err = a.client.CoreV1().Nodes().PatchStatus(ctx, a.cfg.NodeName, patch)
	return err
}

// Heartbeat keeps the Node alive until ctx ends: it renews the Node's
// Lease in kube-node-lease every quarter of Options.LeaseDuration (the
// kubelet's lease controller, from k8s.io/component-helpers) and posts
// the status every Options.StatusReportFrequency. When ctx ends it posts
// Ready=False (reason NodeAgentStopped), as a kubelet shutting down
// gracefully does, and returns nil.
func (a *Agent) Heartbeat(ctx context.Context) error {
	seconds := int32(a.opts.LeaseDuration / time.Second)
	lc := lease.NewController(clock.RealClock{}, a.client, a.cfg.NodeName, seconds, nil,
		a.opts.LeaseDuration/4, a.cfg.NodeName, corev1.NamespaceNodeLease, a.ownLease)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lc.Run(ctx)
	}()
	t := time.NewTicker(a.opts.StatusReportFrequency)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			if a.rebooting.Load() {
				a.opts.Logf("stopped (rebooting)")
				return nil
			}
			a.postStopped(ctx)
			return nil
		case <-t.C:
			if err := a.postStatus(ctx, true, "KubeletReady", "millwright-node-agent is posting ready status (it runs no containers)"); err != nil && ctx.Err() == nil {
				a.opts.Logf("posting the Node's status: %v", err)
			}
		}
	}
}

// reasonStopped is the reason of the Ready=False the agent posts when it
// stops.
const reasonStopped = "NodeAgentStopped"

// postStopped posts Ready=False (reason NodeAgentStopped) once ctx, the
// agent's life, has ended, as a kubelet shutting down gracefully does.
func (a *Agent) postStopped(ctx context.Context) {
	// Bounded below the 20s pid 1 gives the agent to stop.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := a.postStatus(stopCtx, false, reasonStopped, "millwright-node-agent stopped (the machine is shutting down)"); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		a.opts.Logf("posting NotReady on stop: %v", err)
	}
	a.opts.Logf("stopped")
}

// ownLease makes the Node own its Lease, as the kubelet does, so the
// garbage collector deletes the Lease with the Node.
func (a *Agent) ownLease(l *coordinationv1.Lease) error {
	if len(l.OwnerReferences) == 0 {
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: a.node.Name, UID: a.node.UID,
			BlockOwnerDeletion: ptr.To(false),
		}}
	}
	return nil
}

// Client is the agent's client, authenticated as system:node:<name>.
func (a *Agent) Client() kubernetes.Interface { return a.client }
