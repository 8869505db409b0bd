package sim

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// A NodeReader that has not seen a Node yet (a cache's lag) neither makes
// the sim register it twice nor leave it gone: the NotFound that would
// stop the sim is asked of the API server, and a create that finds the
// Node there is looked at again later, not failed.
func TestALaggingNodeReaderIsCheckedAgainstTheAPIServer(t *testing.T) {
	c := fakeClient()
	s, _ := newTestSim(t, Options{Client: c, NodeReader: fakeClient(), NodeResync: -1})
	mustCreate(t, s, machine("m1", "c"), class("c", basicSpec))
	ctx := context.Background()
	if _, err := s.nodes.reconcile(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := readyOf(waitNode(t, c, "m1")); got != corev1.ConditionTrue {
		t.Fatalf("registered Node Ready=%s; want True", got)
	}

	// The reader still says NotFound; the VM dies. The sim must find the
	// Node through the API server and report it, not take it for deleted.
	vm := s.Cloud().MachineVMs("default", "m1")[0]
	if _, err := s.Cloud().KillVM(vm.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.nodes.reconcile(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := readyOf(waitNode(t, c, "m1")); got != corev1.ConditionUnknown {
		t.Fatalf("the dead VM's Node is Ready=%s; want Unknown", got)
	}

	// A VM not yet recorded as registered whose Node is there (the reader
	// lags behind it): its create answers AlreadyExists, and the sim looks
	// again once the reader may show it.
	mustCreate(t, s, machine("m2", "c"), class("c", basicSpec))
	vm2 := s.Cloud().MachineVMs("default", "m2")[0]
	if err := c.Create(ctx, buildNode(&vm2, NodeModeBuiltin, epoch)); err != nil {
		t.Fatal(err)
	}
	after, err := s.nodes.reconcile(ctx, "m2")
	if err != nil || after != lagRetry {
		t.Fatalf("reconcile of a Node the reader has not seen: after %s, error %v; want %s, nil", after, err, lagRetry)
	}
}

// With an informer's cache as NodeReader, a resync puts Nodes back in
// shape without reading one from the API server.
func TestResyncFromACacheReadsNoNode(t *testing.T) {
	e := controlPlane(t)
	var liveReads atomic.Int32
	nodes, err := cache.New(e.Config, cache.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// As millwright-sim does (simserver): the sim starts once the cache
	// holds every Node. A read of a cache not started yet fails, and the
	// registrar's retry waits on the fake clock, which nothing moves: the
	// Node was never registered on a loaded machine.
	if _, err := nodes.GetInformer(ctx, &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = nodes.Start(ctx) }()
	if !nodes.WaitForCacheSync(ctx) {
		t.Fatal("the Node cache did not sync")
	}
	live := &countingNodeGets{Client: e.Client, n: &liveReads}
	const resync = time.Hour
	s, fc := newTestSim(t, Options{Client: live, NodeReader: nodes, NodeResync: resync})
	start(t, s)
	deleteNodesAfter(t, e.Client, "cached-a", "cached-b")
	mc := class("cached", basicSpec)
	for _, m := range []string{"cached-a", "cached-b"} {
		mustCreate(t, s, machine(m, "cached"), mc)
		waitReady(t, e.Client, m, corev1.ConditionTrue)
	}

	// Someone else marks a Node NotReady; the resync, reading the cache,
	// puts it back.
	n, _ := getNode(t, e.Client, "cached-a")
	orig := n.DeepCopy()
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, metav1.Now()
		}
	}
	if err := e.Client.Status().Patch(ctx, n, client.StrategicMergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the cache sees the Node NotReady", func() (bool, error) {
		var cached corev1.Node
		if err := nodes.Get(ctx, client.ObjectKeyFromObject(n), &cached); err != nil {
			return false, err
		}
		got, _ := readyOf(&cached)
		return got == corev1.ConditionFalse, nil
	})
	liveReads.Store(0)
	fc.Step(resync)
	waitReady(t, e.Client, "cached-a", corev1.ConditionTrue)
	if got := liveReads.Load(); got != 0 {
		t.Errorf("the resync read %d Nodes from the API server; want 0, all from the cache", got)
	}
}

// countingNodeGets counts the Node GETs made through it.
type countingNodeGets struct {
	client.Client
	n *atomic.Int32
}

func (c *countingNodeGets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Node); ok {
		c.n.Add(1)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
