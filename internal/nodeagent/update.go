package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// WatchUpdates carries out the in-place updates Millwright hands to this
// node through its Node's labels, until ctx ends or the machine reboots
// (docs/in-place-updates.md, "The node side"):
//
//   - update=ready with update-version=v: a v that is not a Kubernetes
//     version or breaks the version skew policy against the API server's
//     /version is refused (update=failed, the reason in the update-message
//     annotation); otherwise the agent labels update=in-progress, records v
//     on its state device, reports the Node NotReady (reason
//     NodeAgentUpdating) and reboots the machine;
//   - update=in-progress with v: after the reboot the agent runs v,
//     reports it as its kubeletVersion (register does, before this runs)
//     and labels update=succeeded; a node that runs another version (the
//     update did not take) labels update=failed.
//
// A v the node already runs succeeds at once, without a reboot.
func (a *Agent) WatchUpdates(ctx context.Context) {
	// The Node authorizer lets a node list and watch its own Node only.
	sel := fields.OneTermEqualSelector("metadata.name", a.cfg.NodeName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return a.client.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return a.client.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, cache.Indexers{})
	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
	}); err != nil {
		a.opts.Logf("watching Node %s for updates: %v", a.cfg.NodeName, err)
		return
	}
	done := make(chan struct{})
	informerCtx, stop := context.WithCancel(ctx)
	go func() {
		defer close(done)
		inf.RunWithContext(informerCtx)
	}()
	defer func() { stop(); <-done }()
	// One update at a time, from the latest Node: events only wake this up.
	for !a.rebooting.Load() {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		obj, ok, err := inf.GetStore().GetByKey(a.cfg.NodeName)
		if err != nil || !ok {
			continue
		}
		if err := a.handleUpdate(ctx, obj.(*corev1.Node)); err != nil && ctx.Err() == nil {
			a.opts.Logf("in-place update: %v; retrying in %s", err, a.opts.RetryInterval)
			time.AfterFunc(a.opts.RetryInterval, notify)
		}
	}
}

// handleUpdate acts on the Node's update labels once.
func (a *Agent) handleUpdate(ctx context.Context, n *corev1.Node) error {
	phase, v := n.Labels[v1alpha1.NodeUpdateLabel], n.Labels[v1alpha1.NodeUpdateVersionLabel]
	switch {
	case phase != v1alpha1.NodeUpdateReady && phase != v1alpha1.NodeUpdateInProgress:
		return nil
	case v == a.version:
		a.opts.Logf("in-place update to %s: succeeded (the node runs it)", v)
		return a.setUpdate(ctx, v1alpha1.NodeUpdateSucceeded, "")
	case phase == v1alpha1.NodeUpdateInProgress:
		// Only this agent labels in-progress, just before it reboots; a
		// boot that finds it with another version did not get the update.
		return a.setUpdate(ctx, v1alpha1.NodeUpdateFailed, fmt.Sprintf("the node runs %s after its reboot, not %s: the update did not take", a.version, v))
	}
	sv, err := a.client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the API server's version: %w", err)
	}
	if why := refuseVersion(v, sv.GitVersion); why != "" {
		a.opts.Logf("in-place update to %q refused: %s", v, why)
		return a.setUpdate(ctx, v1alpha1.NodeUpdateFailed, why)
	}
	if !a.hasState() {
		return a.setUpdate(ctx, v1alpha1.NodeUpdateFailed, "the node has no state device: the version would not survive its reboot")
	}
	if err := a.setUpdate(ctx, v1alpha1.NodeUpdateInProgress, ""); err != nil {
		return err
	}
	before, err := a.recordVersion(v)
	if err != nil {
		return a.setUpdate(ctx, v1alpha1.NodeUpdateFailed, fmt.Sprintf("recording %s on the state device: %v", v, err))
	}
	a.rebooting.Store(true)
	if err := a.postStatus(ctx, false, "NodeAgentUpdating", fmt.Sprintf("millwright-node-agent is rebooting the machine into Kubernetes %s", v)); err != nil {
		a.opts.Logf("posting NotReady before the reboot: %v", err)
	}
	a.opts.Logf("in-place update from %s to %s: rebooting", a.version, v)
	if err := a.opts.Reboot(); err != nil {
		// Still running the old version: say so, and be Ready again.
		a.rebooting.Store(false)
		if _, werr := a.recordVersion(before); werr != nil {
			a.opts.Logf("restoring the state device after the failed reboot: %v", werr)
		}
		if perr := a.postStatus(ctx, true, "KubeletReady", "millwright-node-agent is posting ready status (it runs no containers)"); perr != nil {
			a.opts.Logf("posting Ready after the failed reboot: %v", perr)
		}
		return a.setUpdate(ctx, v1alpha1.NodeUpdateFailed, fmt.Sprintf("rebooting: %v", err))
	}
	return nil
}

// setUpdate labels the Node's update phase, with the message annotation
// for a failure and without one otherwise, in one merge patch (a node may
// patch its own Node's labels outside the kubernetes.io and k8s.io
// domains under NodeRestriction).
func (a *Agent) setUpdate(ctx context.Context, phase, message string) error {
	var msg any // null removes the annotation
	if message != "" {
		msg = message
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]any{v1alpha1.NodeUpdateLabel: phase},
		"annotations": map[string]any{v1alpha1.NodeUpdateMessageAnnotation: msg},
	}})
	if err != nil {
		return err
	}
	if _, err := a.client.CoreV1().Nodes().Patch(ctx, a.cfg.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling Node %s %s=%s: %w", a.cfg.NodeName, v1alpha1.NodeUpdateLabel, phase, err)
	}
	return nil
}

// recordVersion records v as the node's version on the state device,
// keeping the rest of the record (a certificate rotated meanwhile
// included), and returns the version recorded before.
func (a *Agent) recordVersion(v string) (string, error) {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	next := *a.state
	next.Version = v
	if err := WriteState(a.opts.StatePath, &next); err != nil {
		return "", err
	}
	before := a.state.Version
	a.state = &next
	return before, nil
}

// hasState reports whether the agent keeps a state record.
func (a *Agent) hasState() bool {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	return a.opts.StatePath != "" && a.state != nil
}
