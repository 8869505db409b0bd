package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

func fakeClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).Build()
}

func getNode(t *testing.T, c client.Client, name string) (*corev1.Node, bool) {
	t.Helper()
	var n corev1.Node
	err := c.Get(context.Background(), client.ObjectKey{Name: name}, &n)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("reading Node %s: %v", name, err)
	}
	return &n, true
}

func readyOf(n *corev1.Node) (corev1.ConditionStatus, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

// waitReady waits until the Node's Ready condition has the status.
func waitReady(t *testing.T, c client.Client, name string, want corev1.ConditionStatus) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("Node %s Ready=%s", name, want), func() (bool, error) {
		n, ok := getNode(t, c, name)
		node = n
		if !ok {
			return false, nil
		}
		got, _ := readyOf(n)
		return got == want, nil
	})
	return node
}

func waitNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	testenv.Eventually(t, 30*time.Second, "Node "+name, func() (bool, error) {
		n, ok := getNode(t, c, name)
		node = n
		return ok, nil
	})
	return node
}

// classWithTemplate is a class whose nodeTemplate sets labels, a taint and
// part of the capacity.
func classWithTemplate(name, spec string) *v1alpha1.MachineClass {
	mc := class(name, spec)
	arch := "arm64"
	mc.Spec.NodeTemplate = &v1alpha1.NodeTemplate{
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), "nvidia.com/gpu": resource.MustParse("1")},
		Architecture: &arch,
		Labels:       map[string]string{"node.millwright.dev/pool": "small", corev1.LabelTopologyZone: "ignored"},
		Taints:       []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}},
	}
	return mc
}

func TestBuiltinNodeRegistersAfterBootWithTheClassesShape(t *testing.T) {
	c := fakeClient()
	s, fc := newTestSim(t, Options{Client: c})
	start(t, s)
	mc := classWithTemplate("small", `{"region":"local","zones":["local-a"],"instanceType":"sim.small","bootDelay":"30s"}`)
	resp := mustCreate(t, s, machine("m1", "small"), mc)

	fc.Step(29 * time.Second)
	if _, ok := getNode(t, c, "m1"); ok {
		t.Fatal("the Node registered before the VM booted")
	}
	fc.Step(time.Second)
	node := waitReady(t, c, "m1", corev1.ConditionTrue)

	if node.Spec.ProviderID != resp.ProviderID {
		t.Errorf("providerID %q; want %q", node.Spec.ProviderID, resp.ProviderID)
	}
	for k, v := range map[string]string{
		corev1.LabelHostname: "m1", corev1.LabelTopologyRegion: "local", corev1.LabelTopologyZone: "local-a",
		corev1.LabelInstanceTypeStable: "sim.small", corev1.LabelArchStable: "arm64", corev1.LabelOSStable: "linux",
		"node.millwright.dev/pool": "small",
	} {
		if node.Labels[k] != v {
			t.Errorf("label %s=%q; want %q", k, node.Labels[k], v)
		}
	}
	if _, ok := node.Labels[KwokTypeLabel]; ok {
		t.Error("a builtin Node carries kwok's label")
	}
	wantTaints := []corev1.Taint{
		{Key: v1alpha1.UninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute},
	}
	if fmt.Sprint(node.Spec.Taints) != fmt.Sprint(wantTaints) {
		t.Errorf("taints %v; want %v", node.Spec.Taints, wantTaints)
	}
	for name, want := range map[corev1.ResourceName]string{
		corev1.ResourceCPU: "3", corev1.ResourceMemory: "4Gi", corev1.ResourcePods: "110", "nvidia.com/gpu": "1",
	} {
		if q := node.Status.Capacity[name]; q.String() != want {
			t.Errorf("capacity %s=%s; want %s", name, q.String(), want)
		}
		if q := node.Status.Allocatable[name]; q.String() != want {
			t.Errorf("allocatable %s=%s; want %s", name, q.String(), want)
		}
	}
	if len(node.Status.Addresses) != 2 || node.Status.Addresses[0].Address != resp.Addresses[0].Address {
		t.Errorf("addresses %v; want the VM's %v", node.Status.Addresses, resp.Addresses)
	}
	testenv.Eventually(t, 30*time.Second, "registration recorded", func() (bool, error) {
		return s.Cloud().MachineVMs("default", "m1")[0].NodeRegisteredAt != nil, nil
	})
	if vm := s.Cloud().MachineVMs("default", "m1")[0]; !vm.NodeRegisteredAt.Equal(epoch.Add(30 * time.Second)) {
		t.Errorf("registration time %v", vm.NodeRegisteredAt)
	}
}

func TestBuiltinNodeReadinessFollowsTheVM(t *testing.T) {
	c := fakeClient()
	s, _ := newTestSim(t, Options{Client: c})
	start(t, s)
	mc := class("c", basicSpec)
	for _, m := range []string{"killed", "deleted", "sick"} {
		mustCreate(t, s, machine(m, "c"), mc)
		waitReady(t, c, m, corev1.ConditionTrue)
	}

	vm := s.Cloud().MachineVMs("default", "killed")[0]
	if _, err := s.Cloud().KillVM(vm.ID); err != nil {
		t.Fatal(err)
	}
	if _, reason := readyOf(waitReady(t, c, "killed", corev1.ConditionUnknown)); reason != "NodeStatusUnknown" {
		t.Errorf("killed VM's Node reason %q", reason)
	}

	if err := del(s, machine("deleted", "c"), mc); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "deleted", corev1.ConditionUnknown)

	if _, err := s.Cloud().SetNodeReady("sick", false); err != nil {
		t.Fatal(err)
	}
	if _, reason := readyOf(waitReady(t, c, "sick", corev1.ConditionFalse)); reason != "KubeletNotReady" {
		t.Errorf("NotReady reason %q", reason)
	}
	if _, err := s.Cloud().SetNodeReady("sick", true); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "sick", corev1.ConditionTrue)
}

func TestNodeNotReadyFaultStrikesAfterTheDelay(t *testing.T) {
	c := fakeClient()
	s, fc := newTestSim(t, Options{Client: c})
	start(t, s)
	mc := class("c", withFaults(`{"nodeNotReady":{"after":"30s"}}`))
	mustCreate(t, s, machine("m1", "c"), mc)
	waitReady(t, c, "m1", corev1.ConditionTrue)
	testenv.Eventually(t, 30*time.Second, "registration recorded", func() (bool, error) {
		return s.Cloud().MachineVMs("default", "m1")[0].NodeRegisteredAt != nil, nil
	})
	fc.Step(29 * time.Second)
	after, err := s.nodes.reconcile(context.Background(), "m1")
	if err != nil || after != time.Second {
		t.Fatalf("29s after registering: look again after %v (%v); want 1s", after, err)
	}
	if st, _ := readyOf(waitNode(t, c, "m1")); st != corev1.ConditionTrue {
		t.Fatalf("Ready=%s before the delay", st)
	}
	// The worker's timer was set on the fake clock at some point during
	// the steps; keep stepping until it fires.
	testenv.Eventually(t, 30*time.Second, "Node m1 NotReady", func() (bool, error) {
		fc.Step(time.Second)
		n, _ := getNode(t, c, "m1")
		st, _ := readyOf(n)
		return st == corev1.ConditionFalse, nil
	})
	if !s.Cloud().MachineVMs("default", "m1")[0].NodeNotReady {
		t.Error("the cloud does not record the Node as NotReady")
	}
}

func TestKwokNodeIsLeftToKwokAndMarkedForItsChaosStage(t *testing.T) {
	c := fakeClient()
	s, _ := newTestSim(t, Options{Client: c, NodeMode: NodeModeKwok})
	start(t, s)
	mc := class("c", basicSpec)
	for _, m := range []string{"killed", "sick"} {
		mustCreate(t, s, machine(m, "c"), mc)
	}
	node := waitNode(t, c, "killed")
	if node.Annotations[KwokNodeAnnotation] != "fake" || node.Labels[KwokTypeLabel] != "kwok" {
		t.Errorf("kwok marks missing: labels %v annotations %v", node.Labels, node.Annotations)
	}
	if len(node.Status.Conditions) != 0 {
		t.Errorf("the sim wrote conditions in kwok mode: %v", node.Status.Conditions)
	}
	if _, ok := node.Labels[KwokNotReadyLabel]; ok {
		t.Error("a healthy Node carries the not-ready label")
	}

	vm := s.Cloud().MachineVMs("default", "killed")[0]
	if _, err := s.Cloud().KillVM(vm.ID); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the chaos label on the killed VM's Node", func() (bool, error) {
		n, _ := getNode(t, c, "killed")
		return n.Labels[KwokNotReadyLabel] == "true" &&
			n.Annotations[kwokNotReadyPrefix+"reason"] == "NodeStatusUnknown", nil
	})

	waitNode(t, c, "sick")
	if _, err := s.Cloud().SetNodeReady("sick", false); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the chaos label", func() (bool, error) {
		n, _ := getNode(t, c, "sick")
		return n.Labels[KwokNotReadyLabel] == "true", nil
	})
	if _, err := s.Cloud().SetNodeReady("sick", true); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the chaos label to go", func() (bool, error) {
		n, _ := getNode(t, c, "sick")
		_, marked := n.Labels[KwokNotReadyLabel]
		_, reason := n.Annotations[kwokNotReadyPrefix+"reason"]
		return !marked && !reason, nil
	})
	if n, _ := getNode(t, c, "sick"); len(n.Status.Conditions) != 0 {
		t.Errorf("the sim wrote conditions in kwok mode: %v", n.Status.Conditions)
	}
}

func TestBootFailureNodeNeverRegisters(t *testing.T) {
	c := fakeClient()
	// One worker takes the queue in order: once the second VM's Node is
	// there, the first VM's turn has passed.
	s, fc := newTestSim(t, Options{Client: c, NodeWorkers: 1})
	mc := class("c", withFaults(`{"bootFailure":{"count":1}}`))
	mustCreate(t, s, machine("m0", "c"), mc)
	mustCreate(t, s, machine("m1", "c"), mc)
	start(t, s)
	waitNode(t, c, "m1")
	fc.Step(time.Hour)
	if _, err := s.nodes.reconcile(context.Background(), "m0"); err != nil {
		t.Fatal(err)
	}
	if _, ok := getNode(t, c, "m0"); ok {
		t.Fatal("a VM with a boot failure registered its Node")
	}
	if vm := s.Cloud().MachineVMs("default", "m0")[0]; !vm.NeverJoins || vm.State != VMRunning {
		t.Fatalf("boot-failed VM %+v", vm)
	}
}

// A Node of the same name left by an earlier VM holds the new VM's
// registration until the machine controller has deleted it.
func TestRegistrationWaitsForAnOldNodeOfTheSameName(t *testing.T) {
	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m1"}, Spec: corev1.NodeSpec{ProviderID: "sim://local/local-a/vm-0ld"}}
	c := fakeClient(old)
	s, fc := newTestSim(t, Options{Client: c})
	start(t, s)
	resp := mustCreate(t, s, machine("m1", "c"), class("c", basicSpec))
	fc.Step(notYetGoneRetry)
	if n, _ := getNode(t, c, "m1"); n.Spec.ProviderID != old.Spec.ProviderID {
		t.Fatalf("the old Node was taken over: %v", n.Spec.ProviderID)
	}
	if err := c.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the new Node", func() (bool, error) {
		fc.Step(notYetGoneRetry)
		n, ok := getNode(t, c, "m1")
		return ok && n.Spec.ProviderID == resp.ProviderID, nil
	})
}

// Nodes that are not the sim's, or whose VM lives, are left alone when
// no live VM has their name.
func TestGoneVMLeavesForeignNodesAlone(t *testing.T) {
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	c := fakeClient(foreign)
	s, _ := newTestSim(t, Options{Client: c})
	before, _ := getNode(t, c, "foreign")
	if _, err := s.nodes.reconcile(context.Background(), "foreign"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.nodes.reconcile(context.Background(), "absent"); err != nil {
		t.Fatal(err)
	}
	if n, _ := getNode(t, c, "foreign"); n.ResourceVersion != before.ResourceVersion {
		t.Fatalf("a foreign Node was changed: %+v", n)
	}
}

// Driver calls never wait for the cluster: with the API server stuck,
// creates still return at once and the Nodes follow once it answers.
func TestRegistrationDoesNotBlockDriverCalls(t *testing.T) {
	unblock := make(chan struct{})
	var once sync.Once
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			select {
			case <-unblock:
			case <-ctx.Done():
				return ctx.Err()
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	t.Cleanup(func() { once.Do(func() { close(unblock) }) })
	s, _ := newTestSim(t, Options{Client: c, NodeWorkers: 2})
	start(t, s)
	mc := class("c", basicSpec)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			mustCreate(t, s, machine(fmt.Sprintf("m%d", i), "c"), mc)
		}
	}()
	testenv.Eventually(t, 30*time.Second, "50 creates while the API server is stuck", func() (bool, error) {
		select {
		case <-done:
			return true, nil
		default:
			return false, nil
		}
	})
	once.Do(func() { close(unblock) })
	for i := range 50 {
		waitNode(t, c, fmt.Sprintf("m%d", i))
	}
}

// A Node write that keeps failing is retried a bounded number of times,
// then left to the next resync.
func TestFailingNodeWritesAreRetriedBoundedly(t *testing.T) {
	var attempts atomic.Int32
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == "bad" {
				attempts.Add(1)
				return errors.New("the API server says no")
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	const resync = 100 * 24 * time.Hour // far beyond the steps below
	s, fc := newTestSim(t, Options{Client: c, NodeWorkers: 1, NodeRetries: 3, NodeResync: resync})
	start(t, s)
	mustCreate(t, s, machine("bad", "c"), class("c", basicSpec))
	for want := int32(1); want <= 4; want++ {
		testenv.Eventually(t, 30*time.Second, fmt.Sprintf("attempt %d", want), func() (bool, error) {
			fc.Step(time.Minute)
			return attempts.Load() >= want, nil
		})
	}
	// The retries are spent: time passes, then a good Node goes through
	// the same single worker, and still only 4 attempts were made.
	fc.Step(time.Hour)
	mustCreate(t, s, machine("good", "c"), class("c", basicSpec))
	waitNode(t, c, "good")
	if n := attempts.Load(); n != 4 {
		t.Fatalf("%d attempts; want 1 + 3 retries", n)
	}
	// The resync tries again.
	fc.Step(resync)
	testenv.Eventually(t, 30*time.Second, "the resync's attempt", func() (bool, error) { return attempts.Load() == 5, nil })
}

// Like a kubelet, a VM registers its Node once: a deleted Node stays gone
// when its VM is looked at again (as every resync does).
func TestDeletedNodeIsNotRegisteredAgain(t *testing.T) {
	c := fakeClient()
	s, _ := newTestSim(t, Options{Client: c})
	start(t, s)
	mustCreate(t, s, machine("m1", "c"), class("c", basicSpec))
	node := waitNode(t, c, "m1")
	testenv.Eventually(t, 30*time.Second, "registration recorded", func() (bool, error) {
		return s.Cloud().MachineVMs("default", "m1")[0].NodeRegisteredAt != nil, nil
	})
	if err := c.Delete(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	if _, err := s.nodes.reconcile(context.Background(), "m1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := getNode(t, c, "m1"); ok {
		t.Fatal("a deleted Node was registered again")
	}
}

// A resync checks the Nodes behind the queue's own work: the Node of a VM
// made while a resync runs is registered after a few of its reads, not
// after all of them (at 5000 VMs, 100 s at the client's 50 reads a
// second).
func TestResyncDoesNotHoldBackNewNodes(t *testing.T) {
	var (
		counting atomic.Bool
		reads    atomic.Int32 // the resync's reads of Nodes
		readsAt  atomic.Int32 // reads when the new VM's Node was created
	)
	readsAt.Store(-1)
	base := fakeClient()
	c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Node); ok && counting.Load() && key.Name != "new" {
				reads.Add(1)
				time.Sleep(10 * time.Millisecond) // a loaded API server's answer
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == "new" {
				readsAt.Store(reads.Load())
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	const resync, workers, vms = time.Hour, 2, 200
	s, fc := newTestSim(t, Options{Client: c, NodeWorkers: workers, NodeResync: resync})
	start(t, s)
	mc := class("c", basicSpec)
	for i := range vms {
		mustCreate(t, s, machine(fmt.Sprintf("m%d", i), "c"), mc)
	}
	for i := range vms {
		waitNode(t, base, fmt.Sprintf("m%d", i))
	}
	counting.Store(true)
	fc.Step(resync)
	testenv.Eventually(t, 30*time.Second, "the resync's first reads", func() (bool, error) { return reads.Load() >= 5, nil })
	before := reads.Load()
	mustCreate(t, s, machine("new", "c"), mc)
	waitNode(t, base, "new")
	// Ahead of it: at most the workers' reads in flight and the workers'
	// worth the resync keeps queued.
	if behind := readsAt.Load() - before; behind > 2*workers+1 {
		t.Errorf("the new VM's Node was registered after %d more of the resync's reads (of %d VMs); want at most %d", behind, vms, 2*workers+1)
	}
}
