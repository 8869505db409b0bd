package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Defaults for the zero values of Options.
const (
	// DefaultVolumeDetachTimeout is machine-controller-manager's default wait
	// for an evicted pod's volumes to detach.
	DefaultVolumeDetachTimeout = 2 * time.Minute
	// DefaultPollInterval is how soon to look again while pods terminate or
	// volumes detach: the kubelet and the attach-detach controller usually
	// take seconds.
	DefaultPollInterval = 5 * time.Second
	// DefaultRetryInterval is how soon to retry evictions a
	// PodDisruptionBudget refused, machine-controller-manager's interval: a
	// budget frees up only when a replacement pod elsewhere becomes ready.
	DefaultRetryInterval = 20 * time.Second
)

// Options configure a drain. The same options must be passed to every Step
// of one drain.
type Options struct {
	// NodeName is the Node to drain.
	NodeName string
	// Force deletes pods with grace period 0 instead of evicting them and
	// waits for no volumes (their VolumeAttachments are released once the
	// VM is gone: ReleaseVolumeAttachments).
	Force bool
	// MaxEvictRetries is how many eviction rounds a PodDisruptionBudget may
	// refuse before the pod is deleted instead. A round is a Step in which at
	// least one eviction was refused; DrainStatus.Attempts counts them.
	MaxEvictRetries int32
	// VolumeDetachTimeout is how long to wait for an evicted pod with
	// persistent volumes to be gone and its volumes to leave
	// node.status.volumesAttached before the next such pod is evicted;
	// 0 means DefaultVolumeDetachTimeout.
	VolumeDetachTimeout time.Duration
	// VolumeIDs maps PV specs to the provider's volume IDs (the driver's
	// GetVolumeIDs). nil, or an Unimplemented error from it, means volumes
	// are identified by their CSI volume handle or PV name as they appear in
	// node.status.volumesAttached; those names are always tried as well.
	VolumeIDs func(ctx context.Context, specs []*corev1.PersistentVolumeSpec) ([]string, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval is the RequeueAfter while pods terminate or volumes
	// detach; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// RetryInterval is the RequeueAfter when evictions were refused or
	// failed and nothing else is in flight; 0 means DefaultRetryInterval.
	RetryInterval time.Duration
	// Rules are the MachineDrainRules that select the Machine (RulesFor):
	// which pods are evicted in which order, skipped, or waited for.
	Rules []Rule
}

// withDefaults fills in the zero values.
func (o Options) withDefaults() Options {
	if o.VolumeDetachTimeout <= 0 {
		o.VolumeDetachTimeout = DefaultVolumeDetachTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	return o
}

// Result is the outcome of one Step. The counts are of this Step's actions,
// except Remaining.
type Result struct {
	// Done: no pod that must leave is left on the Node, and no volume wait
	// is pending. DaemonSet and mirror pods stay and do not count.
	Done bool
	// RequeueAfter is when to call Step again if not Done.
	RequeueAfter time.Duration
	// Message is one line for Machine.status.lastOperation.description.
	Message string
	// Evicted pods were accepted by the Eviction API.
	Evicted int
	// Deleted pods were deleted: refused too often, or forced.
	Deleted int
	// Blocked pods' evictions a PodDisruptionBudget refused this round.
	Blocked int
	// Failed pods' API calls failed otherwise; they are retried next round.
	Failed int
	// Remaining pods must still leave the Node, terminating ones included.
	Remaining int
}

// Step performs one round of the drain and returns at once. It updates
// status in place (refused rounds in Attempts, the pending VolumeWait); the
// caller persists it in Machine.status.deletion.drain and calls Step again
// after RequeueAfter. Step returns an error only when it could not see the
// Node's pods or the Node; failures of single pods are reported in the
// Result and retried next round.
func Step(ctx context.Context, c client.Client, status *v1alpha1.DrainStatus, opts Options) (Result, error) {
	if status == nil {
		return Result{}, errors.New("drain: nil DrainStatus")
	}
	opts = opts.withDefaults()
	p, err := nodePlan(ctx, c, opts.NodeName, opts.Rules)
	if err != nil {
		return Result{}, err
	}
	if opts.Force {
		return forceStep(ctx, c, status, p, opts), nil
	}
	return gracefulStep(ctx, c, status, p, opts)
}

// forceStep deletes every pod that must leave with grace period 0.
func forceStep(ctx context.Context, c client.Client, status *v1alpha1.DrainStatus, p plan, opts Options) Result {
	// A forced drain waits for no volume: the Node is unreachable or out of time.
	status.VolumeWait = nil
	status.Order = nil
	res := Result{Remaining: p.mustLeave()}
	forced := p.toForce()
	keys := make([]string, 0, len(forced))
	for _, pod := range forced {
		keys = append(keys, podKey(pod))
	}
	setBlocking(status, keys)
	// The others were already deleted with grace period 0 and are on their way out.
	r := report{terminating: p.mustLeave() - len(forced)}
	tasks := make([]task, 0, len(forced))
	for _, pod := range forced {
		tasks = append(tasks, task{pod: pod, force: true})
	}
	for i, tr := range runTasks(ctx, c, tasks) {
		res.count(tr)
		r.failure(tasks[i].pod, tr)
	}
	res.finish(status, opts)
	res.Message = r.render(res, status, opts, p)
	return res
}

// gracefulStep evicts pods without volumes in parallel and pods with
// volumes one at a time, each after the previous one's volumes detached.
func gracefulStep(ctx context.Context, c client.Client, status *v1alpha1.DrainStatus, p plan, opts Options) (Result, error) {
	now := opts.Now()
	res := Result{Remaining: p.mustLeave()}
	var r report
	r.terminating = terminating(p)

	// The Node is read only when volumes matter: it lists what is attached.
	var attached []corev1.AttachedVolume
	if status.VolumeWait != nil || len(p.volumes) > 0 {
		node := &corev1.Node{}
		err := c.Get(ctx, client.ObjectKey{Name: opts.NodeName}, node)
		switch {
		case err == nil:
			attached = node.Status.VolumesAttached
		case !apierrors.IsNotFound(err):
			return Result{}, fmt.Errorf("getting node %s: %w", opts.NodeName, err)
		}
	}

	if status.VolumeWait == nil {
		if pod := p.leavingVolumePod(now, opts.VolumeDetachTimeout); pod != nil {
			// An error only costs the wait its volume names; the pod itself is still waited for.
			ids, _ := podVolumeIDs(ctx, c, opts, pod)
			// The wait started when the deletion did, so a pod adopted
			// again and again cannot extend it.
			status.VolumeWait = newWait(pod, ids, attached, deletionStart(pod))
		}
	}
	if w := status.VolumeWait; w != nil {
		state, still := checkWait(w, p.find(w.Pod) != nil, attached, now, opts.VolumeDetachTimeout)
		switch state {
		case waitOver:
			status.VolumeWait = nil
		case waitTimedOut:
			r.gaveUp = fmt.Sprintf("gave up waiting for %s after %s", waitSubject(w.Pod, still), opts.VolumeDetachTimeout)
			status.VolumeWait = nil
		case waitPending:
			r.still = still
		}
	}

	// The next order starts once the previous one is gone, its volumes included.
	held := status.VolumeWait != nil && status.Order != nil && p.hasCurrent && p.current > *status.Order
	switch {
	case held:
		r.held = true
		setBlocking(status, []string{status.VolumeWait.Pod})
	case p.hasCurrent:
		status.Order = &p.current
		setBlocking(status, p.blocking())
	default:
		status.Order = nil
		setBlocking(status, p.blocking())
	}

	if wait := nextRoundIn(status, now, opts.RetryInterval); wait > 0 && res.Remaining > 0 {
		// Too soon after a refusal: no round, so that a Step called early
		// (the Machine woken by its own status write) spends no retry.
		r.nextRound = wait
		res.finish(status, opts)
		res.RequeueAfter = wait
		res.Message = r.render(res, status, opts, p)
		return res, nil
	}
	round := status.Attempts + 1
	deleteIfRefused := outOfRetries(round, opts.MaxEvictRetries)
	var tasks []task
	if !held {
		for _, pod := range p.toEvict() {
			tasks = append(tasks, task{pod: pod, deleteIfRefused: deleteIfRefused, now: now})
		}
	}
	var volPod *corev1.Pod
	var volIDs []string
	if status.VolumeWait == nil && !held {
		if pod := p.nextVolumePod(); pod != nil {
			ids, err := podVolumeIDs(ctx, c, opts, pod)
			if err != nil {
				res.Failed++
				r.failure(pod, taskResult{out: outFailed, err: err})
			} else {
				volPod, volIDs = pod, ids
				tasks = append(tasks, task{pod: pod, deleteIfRefused: deleteIfRefused, now: now})
			}
		}
	}

	refused := false
	for i, tr := range runTasks(ctx, c, tasks) {
		pod := tasks[i].pod
		res.count(tr)
		r.failure(pod, tr)
		if tr.out == outBlocked {
			r.blocked = append(r.blocked, podKey(pod))
		}
		refused = refused || tr.refused
		if pod == volPod && (tr.out == outEvicted || tr.out == outDeleted) {
			status.VolumeWait = newWait(pod, volIDs, attached, now)
			r.still = status.VolumeWait.VolumeIDs
		}
	}
	if refused {
		status.Attempts = round
		status.LastRefusedTime = &metav1.Time{Time: now}
	}
	r.terminating += res.Evicted + res.Deleted
	res.finish(status, opts)
	res.Message = r.render(res, status, opts, p)
	return res, nil
}

// nextRoundIn is how long until the next eviction round may run: the
// retry interval after the last refusal; 0 when it may run now.
func nextRoundIn(status *v1alpha1.DrainStatus, now time.Time, interval time.Duration) time.Duration {
	if status.LastRefusedTime == nil {
		return 0
	}
	return max(0, status.LastRefusedTime.Add(interval).Sub(now))
}

// outOfRetries reports whether a pod whose eviction is refused in round
// (counting refused rounds from 1) is deleted instead: once the refusals
// exceed maxRetries. Eviction is always tried first, so a budget that frees
// up in time is still honoured, and even maxRetries 0 evicts once.
func outOfRetries(round, maxRetries int32) bool {
	return round > maxRetries
}

// podVolumeIDs returns the names under which pod's persistent volumes may
// appear in node.status.volumesAttached.
func podVolumeIDs(ctx context.Context, c client.Client, opts Options, pod *corev1.Pod) ([]string, error) {
	pvs, err := boundVolumes(ctx, c, pod)
	if err != nil {
		return nil, err
	}
	return volumeIDs(ctx, opts.VolumeIDs, pvs)
}

// newWait records a wait, started at start, for pod and those of its
// volumes that are attached now; volumes not attached have nothing to detach.
func newWait(pod *corev1.Pod, ids []string, attached []corev1.AttachedVolume, start time.Time) *v1alpha1.VolumeWait {
	return &v1alpha1.VolumeWait{
		Pod:       podKey(pod),
		VolumeIDs: stillAttached(ids, attached),
		StartTime: metav1.NewTime(start),
	}
}

// maxBlocking bounds DrainStatus.BlockingPods: the status names a few, the
// count says how many.
const maxBlocking = 10

// setBlocking records the pods the drain waits for.
func setBlocking(status *v1alpha1.DrainStatus, keys []string) {
	status.BlockingPodCount = int32(len(keys))
	if len(keys) > maxBlocking {
		keys = keys[:maxBlocking]
	}
	status.BlockingPods = keys
}

// namespaceLabels returns the labels of every namespace, by name, for the
// rules' namespace selectors: one List per Step rather than a Get per pod.
func namespaceLabels(ctx context.Context, c client.Client) (map[string]labels.Set, error) {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing namespaces for the drain rules: %w", err)
	}
	out := make(map[string]labels.Set, len(list.Items))
	for _, ns := range list.Items {
		out[ns.Name] = ns.Labels
	}
	return out, nil
}

// terminating counts the pods that must leave whose deletion has started.
func terminating(p plan) int {
	n := 0
	for _, list := range [][]*corev1.Pod{p.plain, p.volumes, p.waits} {
		for _, pod := range list {
			if leaving(pod) {
				n++
			}
		}
	}
	return n
}

// count adds a task's outcome to the result.
func (res *Result) count(tr taskResult) {
	switch tr.out {
	case outEvicted:
		res.Evicted++
	case outDeleted:
		res.Deleted++
	case outBlocked:
		res.Blocked++
	case outGone:
		res.Remaining--
	case outFailed:
		res.Failed++
	}
}

// finish sets Done and RequeueAfter.
func (res *Result) finish(status *v1alpha1.DrainStatus, opts Options) {
	res.Done = res.Remaining <= 0 && status.VolumeWait == nil
	if res.Remaining < 0 {
		res.Remaining = 0
	}
	switch {
	case res.Done:
		res.RequeueAfter = 0
	case res.Blocked+res.Failed > 0 && res.Evicted+res.Deleted == 0 && status.VolumeWait == nil && res.Remaining == res.Blocked+res.Failed:
		// Only refused or failed pods are left: nothing changes until a
		// budget frees up, so retry at the slower pace.
		res.RequeueAfter = opts.RetryInterval
	default:
		res.RequeueAfter = opts.PollInterval
	}
}
