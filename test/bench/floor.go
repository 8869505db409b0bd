package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/kwok"
)

// floorLabel marks the floor's Nodes, so they are found and deleted together.
const floorLabel = "bench.millwright.dev/floor"

// floorWorkers is how many creates of each kind are in flight at once:
// enough that the client's rate limit, not round trips, bounds the floor,
// as it bounds the manager's MachineSet and the sim's Node workers.
const floorWorkers = 16

// floor makes only the writes no machine controller can avoid for n
// machines: n Machine objects (in a namespace the manager does not watch)
// and n kwok Nodes, then waits until kwok has made every Node Ready. The
// Machines go through a client with the manager's QPS and the Nodes
// through another with the sim's, as in the real system, where the manager
// creates Machines and the sim registers Nodes concurrently. It returns the
// seconds from the first create to the last Node Ready and where the
// machine's CPU went meanwhile, and removes what it made. With hold > 0 it
// keeps the Ready Nodes that long first and says whether they stayed Ready.
func (e *env) floor(ctx context.Context, o *observer, n int, tag string, timeout, hold time.Duration) (r floorRun, err error) {
	if err := e.admin.Create(ctx, machineClass(floorNamespace, classFast, 0)); err != nil && !apierrors.IsAlreadyExists(err) {
		return r, err
	}
	machines, err := e.client(e.qps, e.burst)
	if err != nil {
		return r, err
	}
	nodes, err := e.client(e.qps, e.burst)
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cpu := takeCPU(e.cluster.PIDs())
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() {
		errs <- parallel(ctx, n, func(i int) error {
			return machines.Create(ctx, &v1alpha1.Machine{
				ObjectMeta: metav1.ObjectMeta{Namespace: floorNamespace, Name: fmt.Sprintf("floor-%s-%d", tag, i)},
				Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: classFast}},
			})
		})
	})
	wg.Go(func() {
		errs <- parallel(ctx, n, func(i int) error { return nodes.Create(ctx, floorNode(tag, i)) })
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return r, fmt.Errorf("floor: %w", err)
		}
	}
	created := time.Since(begin)
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ready, err := o.readyNodes(ctx, tag)
		return ready == n, err
	})
	if err != nil {
		return r, fmt.Errorf("floor: the Nodes did not all become Ready: %w", err)
	}
	r.seconds = time.Since(begin).Seconds()
	r.cpu = takeCPU(e.cluster.PIDs()).since(cpu, r.seconds)
	logf("floor(%d): created in %s, all Ready after %.1fs", n, created.Round(100*time.Millisecond), r.seconds)
	if hold > 0 {
		if r.held, err = e.holdFloor(ctx, o, n, tag, hold); err != nil {
			return r, err
		}
	}
	return r, e.removeFloor(context.WithoutCancel(ctx), o, tag)
}

// floorRun is what a floor measured.
type floorRun struct {
	seconds float64     // first create to last Node Ready
	cpu     *cpuFigures // over those seconds
	held    *heldFloor  // with a hold, what happened in it
}

// heldFloor is what happened while the floor's Nodes were kept (-floor-hold):
// whether kwok kept them all Ready.
type heldFloor struct {
	Seconds float64 `json:"seconds"`
	// ReadyFlaps are Node Ready → not Ready transitions in the window.
	ReadyFlaps int64 `json:"node_ready_flaps"`
	// NotReadyAtEnd are the floor's Nodes not Ready when the window ended.
	NotReadyAtEnd int `json:"not_ready_at_end"`
	// LeasePUTsPerSecond is the API server's Lease PUT rate in the window
	// (all of kwok's renewals; nothing else runs yet).
	LeasePUTsPerSecond float64 `json:"lease_puts_per_second"`
	// OldestLeaseSeconds is the age of the least recently renewed Lease of
	// the floor's Nodes at the end: kwok keeps up while it stays near the
	// renewal interval (a quarter of the Lease), far under the grace period.
	OldestLeaseSeconds float64 `json:"oldest_lease_seconds"`
}

// holdFloor keeps the floor's n Ready Nodes for d and reports whether kwok
// kept them Ready: the test of the Lease settings (docs/benchmarks.md).
func (e *env) holdFloor(ctx context.Context, o *observer, n int, tag string, d time.Duration) (*heldFloor, error) {
	logf("floor: holding %d Nodes for %s, counting Ready flaps and Lease PUTs", n, d)
	before, err := e.apiServerWrites(ctx)
	if err != nil {
		return nil, err
	}
	flaps, begin := o.nodeFlaps.Load(), time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
	}
	after, err := e.apiServerWrites(ctx)
	if err != nil {
		return nil, err
	}
	ready, err := o.readyNodes(ctx, tag)
	if err != nil {
		return nil, err
	}
	h := &heldFloor{Seconds: round(time.Since(begin).Seconds(), 1), ReadyFlaps: o.nodeFlaps.Load() - flaps, NotReadyAtEnd: n - ready}
	h.LeasePUTsPerSecond = round((after["leases PUT"]-before["leases PUT"])/time.Since(begin).Seconds(), 1)
	if h.OldestLeaseSeconds, err = e.oldestLease(ctx, n, tag); err != nil {
		return nil, err
	}
	logf("floor: held %.1fs: %d Ready flaps, %d not Ready at the end, %.1f Lease PUTs/s, oldest Lease renewed %.1fs ago",
		h.Seconds, h.ReadyFlaps, h.NotReadyAtEnd, h.LeasePUTsPerSecond, h.OldestLeaseSeconds)
	return h, nil
}

// oldestLease is the age, in seconds, of the least recently renewed Lease
// of the floor's n Nodes; a Node without a Lease fails.
func (e *env) oldestLease(ctx context.Context, n int, tag string) (float64, error) {
	var l coordinationv1.LeaseList
	if err := e.admin.List(ctx, &l, client.InNamespace(corev1.NamespaceNodeLease)); err != nil {
		return 0, err
	}
	renewed := map[string]time.Time{}
	for _, lease := range l.Items {
		if lease.Spec.RenewTime != nil {
			renewed[lease.Name] = lease.Spec.RenewTime.Time
		}
	}
	now, oldest := time.Now(), 0.0
	for i := range n {
		name := floorNode(tag, i).Name
		at, ok := renewed[name]
		if !ok {
			return 0, fmt.Errorf("floor Node %s has no renewed Lease", name)
		}
		oldest = max(oldest, now.Sub(at).Seconds())
	}
	return round(oldest, 1), nil
}

func floorNode(tag string, i int) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("floor-%s-%d", tag, i),
			Labels:      map[string]string{floorLabel: tag, "type": "kwok"},
			Annotations: map[string]string{kwok.NodeAnnotation: kwok.NodeAnnotationValue},
		},
	}
}

// readyNodes counts the floor Nodes of tag that are Ready.
func (o *observer) readyNodes(ctx context.Context, tag string) (int, error) {
	var l corev1.NodeList
	if err := o.cache.List(ctx, &l, client.MatchingLabels{floorLabel: tag}, client.UnsafeDisableDeepCopy); err != nil { // read only
		return 0, err
	}
	ready := 0
	for _, node := range l.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, nil
}

// removeFloor deletes the floor's Nodes and Machines and waits until the
// Nodes are gone, so the next scenario starts on an empty cluster.
func (e *env) removeFloor(ctx context.Context, o *observer, tag string) error {
	if err := e.deleteAllOf(ctx, &corev1.Node{}, client.MatchingLabels{floorLabel: tag}); err != nil {
		return fmt.Errorf("deleting the floor's Nodes: %w", err)
	}
	if err := e.deleteAllOf(ctx, &v1alpha1.Machine{}, client.InNamespace(floorNamespace)); err != nil {
		return fmt.Errorf("deleting the floor's Machines: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var l corev1.NodeList
		if err := o.cache.List(ctx, &l, client.MatchingLabels{floorLabel: tag}, client.UnsafeDisableDeepCopy); err != nil { // read only
			return false, err
		}
		return len(l.Items) == 0, nil
	})
}

// deleteAllOf deletes the objects of obj's kind that opts select, and asks
// again while the API server cuts the deletion off: on a slow host its
// request timeout ended the deletion of 500 floor Nodes (2026-12-05), and
// what it deleted before stays deleted.
func (e *env) deleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if last = e.admin.DeleteAllOf(ctx, obj, opts...); last != nil {
			logf("deleting the %T objects failed (%v); asking again", obj, last)
			return false, nil
		}
		return true, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// parallel runs do(0..n-1) on floorWorkers goroutines and returns the first error.
func parallel(ctx context.Context, n int, do func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range floorWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := do(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
