package sim

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// registrar plays the kubelets of all VMs: it registers each booted VM's
// Node in the target cluster and keeps its readiness in line with the VM.
// Driver calls only put node names on its queue, so they never wait for
// the cluster; a few workers drain the queue. Each item is reconciled from
// the cloud's current state (level-based), so repeats and restarts are
// harmless.
type registrar struct {
	client client.Client
	// nodes is where Nodes are read: Options.NodeReader, or client.
	nodes   client.Reader
	mode    NodeMode
	cloud   *Cloud
	clock   clock.WithTicker
	queue   workqueue.TypedRateLimitingInterface[string]
	workers int
	retries int
	resync  time.Duration
	log     *slog.Logger
}

// notYetGoneRetry is how often a Node is looked at again while an older
// Node of the same name, from a deleted VM, is still in the cluster.
const notYetGoneRetry = 5 * time.Second

// lagRetry is when a Node is looked at again after its create found it
// there: Options.NodeReader, a cache, had not seen it yet.
const lagRetry = time.Second

func newRegistrar(opts Options, cloud *Cloud) *registrar {
	nodes := opts.NodeReader
	if nodes == nil {
		nodes = opts.Client
	}
	return &registrar{
		client: opts.Client,
		nodes:  nodes,
		mode:   opts.NodeMode,
		cloud:  cloud,
		clock:  opts.Clock,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Clock: opts.Clock},
		),
		workers: opts.NodeWorkers,
		retries: opts.NodeRetries,
		resync:  opts.NodeResync,
		log:     opts.Logger,
	}
}

// enqueue asks for the Node to be reconciled after the delay.
func (r *registrar) enqueue(nodeName string, after time.Duration) {
	if r.client == nil || nodeName == "" {
		return
	}
	if after > 0 {
		r.queue.AddAfter(nodeName, after)
		return
	}
	r.queue.Add(nodeName)
}

// run works the queue until ctx ends. It first checks every VM's Node,
// so a sim restarted from a snapshot converges the cluster to its state.
func (r *registrar) run(ctx context.Context) {
	if r.client == nil {
		<-ctx.Done()
		r.queue.ShutDown()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.resyncLoop(ctx) })
	for range r.workers {
		wg.Go(func() {
			for r.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	r.queue.ShutDown()
	wg.Wait()
}

// enqueueAll puts every VM's Node on the queue, behind the queue's own
// work: a booted VM's Node is added only while fewer than r.workers wait,
// so the Node of a VM made meanwhile waits behind that many at most.
// Without a NodeReader each check reads the Node from the API server; a
// resync that queued all 5000 at once held the Nodes of new VMs back for
// 100 s, the time 5000 reads take at the client's 50 a second
// (docs/benchmarks.md).
func (r *registrar) enqueueAll(ctx context.Context) {
	for _, vm := range r.cloud.VMs() {
		if after := vm.BootAt.Sub(r.clock.Now()); after > 0 {
			r.enqueue(vm.NodeName, after)
			continue
		}
		err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
			return r.queue.Len() < r.workers, nil
		})
		if err != nil {
			return
		}
		r.enqueue(vm.NodeName, 0)
	}
}

// resyncLoop checks every VM's Node once, then every r.resync. The
// period counts from the start, not from the end of the first pass: a
// first pass over thousands of VMs takes long, and a ticker started after
// it would miss a clock that moved meanwhile.
func (r *registrar) resyncLoop(ctx context.Context) {
	var tick <-chan time.Time // nil (never) when resyncs are off
	if r.resync > 0 {
		t := r.clock.NewTicker(r.resync)
		defer t.Stop()
		tick = t.C()
	}
	r.enqueueAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			r.enqueueAll(ctx)
		}
	}
}

func (r *registrar) processNext(ctx context.Context) bool {
	name, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(name)
	after, err := r.reconcile(ctx, name)
	switch {
	case err != nil && ctx.Err() != nil:
		r.queue.Forget(name)
	case err != nil && r.queue.NumRequeues(name) < r.retries:
		r.log.Info("node write failed; retrying", "node", name, "error", err)
		r.queue.AddRateLimited(name)
	case err != nil:
		r.log.Error("node write failed; giving up until the next resync", "node", name, "error", err)
		r.queue.Forget(name)
	default:
		r.queue.Forget(name)
		if after > 0 {
			r.queue.AddAfter(name, after)
		}
	}
	return true
}

// reconcile brings one Node in line with its VM and returns when to look
// again (0: not needed).
func (r *registrar) reconcile(ctx context.Context, name string) (time.Duration, error) {
	now := r.clock.Now()
	vm, ok := r.cloud.nodeVM(name)
	if !ok {
		return 0, r.vmGone(ctx, name)
	}
	if vm.NeverJoins {
		return 0, nil
	}
	if !vm.Booted(now) {
		return vm.BootAt.Sub(now), nil
	}
	key := client.ObjectKey{Name: name}
	var node corev1.Node
	err := r.nodes.Get(ctx, key, &node)
	if apierrors.IsNotFound(err) && vm.NodeRegisteredAt != nil {
		// About to leave the Node gone for good: a cache's NotFound may
		// only be its lag behind the registration, so ask the API server.
		err = r.client.Get(ctx, key, &node)
	}
	switch {
	case apierrors.IsNotFound(err):
		if vm.State == VMStopped {
			return 0, nil // a dead VM never registers
		}
		if vm.NodeRegisteredAt != nil {
			// A kubelet registers its Node once per boot: a Node deleted
			// from the cluster stays gone while its VM runs.
			return 0, nil
		}
		node = *buildNode(&vm, r.mode, now)
		err := r.client.Create(ctx, &node)
		if apierrors.IsAlreadyExists(err) {
			// The read lagged behind a Node made since: look again once
			// the read shows it, and decide then whose it is.
			return lagRetry, nil
		}
		if err != nil {
			return 0, fmt.Errorf("registering Node %s: %w", name, err)
		}
		r.log.Info("registered Node", "node", name, "vm", vm.ID, "providerID", vm.ProviderID)
	case err != nil:
		return 0, fmt.Errorf("reading Node %s: %w", name, err)
	case node.Spec.ProviderID != vm.ProviderID:
		// The Node of an earlier VM of the same name: its Machine's
		// controller deletes it; register once it is gone.
		return notYetGoneRetry, nil
	}
	if vm.NodeRegisteredAt == nil {
		vm.NodeRegisteredAt = r.cloud.markRegistered(vm.ID, now)
	}
	var after time.Duration
	want := healthy
	switch {
	case vm.State == VMStopped:
		want = vmStopped
	case vm.NodeNotReady:
		want = notReady
	case vm.NotReadyDelay != nil && vm.NodeRegisteredAt != nil:
		at := vm.NodeRegisteredAt.Add(*vm.NotReadyDelay)
		if now.Before(at) {
			after = at.Sub(now)
		} else {
			r.cloud.markNodeNotReady(vm.ID)
			want = notReady
		}
	}
	return after, r.ensureHealth(ctx, &node, want, now)
}

// vmGone makes the Node of a deleted VM NotReady, if it is still there
// and is one of the sim's Nodes with no live VM. With a NodeReader that
// lags, a Node deleted meanwhile answers the write NotFound: it is gone,
// which is all this wanted.
func (r *registrar) vmGone(ctx context.Context, name string) error {
	var node corev1.Node
	err := r.nodes.Get(ctx, client.ObjectKey{Name: name}, &node)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Node %s: %w", name, err)
	}
	if !strings.HasPrefix(node.Spec.ProviderID, "sim://") || r.cloud.hasProviderID(node.Spec.ProviderID) {
		return nil
	}
	if err := r.ensureHealth(ctx, &node, vmDeleted, r.clock.Now()); !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// ensureHealth makes the Node look as want says. In builtin mode the sim
// writes the Ready condition, as a kubelet (or, for a dead kubelet, the
// node lifecycle controller) does; in kwok mode it sets or clears the
// label kwok's node-not-ready Stage matches, and kwok writes the status.
// It writes only when the Node differs, so resyncs are cheap.
func (r *registrar) ensureHealth(ctx context.Context, node *corev1.Node, want health, now time.Time) error {
	switch r.mode {
	case NodeModeKwok:
		return r.ensureKwokHealth(ctx, node, want)
	default:
		return r.ensureBuiltinHealth(ctx, node, want, now)
	}
}

func (r *registrar) ensureBuiltinHealth(ctx context.Context, node *corev1.Node, want health, now time.Time) error {
	i := readyIndex(node)
	if i >= 0 && node.Status.Conditions[i].Status == want.status && node.Status.Conditions[i].Reason == want.reason {
		return nil
	}
	orig := node.DeepCopy()
	t := metav1.NewTime(now)
	c := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: want.status, Reason: want.reason, Message: want.message,
		LastHeartbeatTime: t, LastTransitionTime: t,
	}
	if i < 0 {
		node.Status.Conditions = append(kubeletConditions(now)[:3], c)
	} else {
		if node.Status.Conditions[i].Status == want.status {
			c.LastTransitionTime = node.Status.Conditions[i].LastTransitionTime
		}
		node.Status.Conditions[i] = c
	}
	if err := r.client.Status().Patch(ctx, node, client.StrategicMergeFrom(orig)); err != nil {
		return fmt.Errorf("setting Node %s Ready=%s: %w", node.Name, want.status, err)
	}
	r.log.Info("set Node readiness", "node", node.Name, "ready", want.status, "reason", want.reason)
	return nil
}

func (r *registrar) ensureKwokHealth(ctx context.Context, node *corev1.Node, want health) error {
	_, marked := node.Labels[KwokNotReadyLabel]
	if marked != !want.ready {
		orig := node.DeepCopy()
		if want.ready {
			delete(node.Labels, KwokNotReadyLabel)
			for _, k := range []string{"reason", "message"} {
				delete(node.Annotations, kwokNotReadyPrefix+k)
			}
		} else {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			// The stage's own delay (1-2s) is kept: it also paces how
			// often kwok re-asserts the NotReady status while the label
			// stays, where a zero delay would rewrite it in a loop.
			node.Labels[KwokNotReadyLabel] = "true"
			node.Annotations[kwokNotReadyPrefix+"reason"] = want.reason
			node.Annotations[kwokNotReadyPrefix+"message"] = want.message
		}
		if err := r.client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("marking Node %s for kwok (ready=%t): %w", node.Name, want.ready, err)
		}
		r.log.Info("set kwok Node readiness", "node", node.Name, "ready", want.ready, "reason", want.reason)
	}
	return nil
}

func readyIndex(node *corev1.Node) int {
	for i, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return i
		}
	}
	return -1
}

// nodeVM returns the live VM whose Node has this name.
func (c *Cloud) nodeVM(nodeName string) (VM, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.byNode[nodeName]
	if !ok {
		return VM{}, false
	}
	return c.vms[id].clone(), true
}

func (c *Cloud) hasProviderID(providerID string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.vmByProviderIDLocked(providerID) != nil
}

// markRegistered records when the VM's Node registered and returns it.
func (c *Cloud) markRegistered(id string, at time.Time) *time.Time {
	c.mu.Lock()
	if vm, ok := c.vms[id]; ok {
		if vm.NodeRegisteredAt == nil {
			vm.NodeRegisteredAt = &at
		}
		at = *vm.NodeRegisteredAt
	}
	c.mu.Unlock()
	c.dirty()
	return &at
}

// markNodeNotReady records that the VM's Node went NotReady for good.
func (c *Cloud) markNodeNotReady(id string) {
	c.mu.Lock()
	if vm, ok := c.vms[id]; ok {
		vm.NodeNotReady = true
	}
	c.mu.Unlock()
	c.dirty()
}
