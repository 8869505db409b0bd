package machine_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/ctrlconfig"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestSeparateControlAndTargetClusters keeps Machines in one API server and
// Nodes in another: the Node registers in the target, is synced and
// deleted there, and nothing leaks into the control cluster.
func TestSeparateControlAndTargetClusters(t *testing.T) {
	const ns = "split-clusters"
	target, h := splitClusters(t, ns, testConfig())
	ctx := t.Context()
	class := &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", ProviderSpec: runtime.RawExtension{Raw: []byte(simSpec)}},
	}
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "split-m", Namespace: ns},
		Spec: v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "c"},
			NodeTemplate: v1alpha1.NodeTemplateSpec{Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"role": "split"}}}},
	}
	for _, obj := range []client.Object{class, m} {
		if err := controllertest.Env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	running := h.WaitPhase("split-m", v1alpha1.PhaseRunning, 30*time.Second)
	node := &corev1.Node{}
	if err := target.Client.Get(ctx, client.ObjectKey{Name: running.Status.NodeRef.Name}, node); err != nil {
		t.Fatalf("the Node is not in the target cluster: %v", err)
	}
	if node.Labels["role"] != "split" {
		t.Errorf("the target Node was not synced: labels %v", node.Labels)
	}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: node.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Node appeared in the control cluster (err %v)", err)
	}

	if err := controllertest.Env.Client.Delete(ctx, running); err != nil {
		t.Fatal(err)
	}
	h.WaitGone("split-m")
	if err := target.Client.Get(ctx, client.ObjectKey{Name: node.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("the target Node survived its Machine (err %v)", err)
	}
}

// splitClusters starts a target cluster (its own API server, where the sim
// registers Nodes) and a manager for the control cluster's namespace ns
// whose machine controller reaches Nodes and pods in the target.
func splitClusters(t *testing.T, ns string, cfg machine.Config) (*testenv.Env, *controllertest.Harness) {
	t.Helper()
	return splitClustersWith(t, ns, cfg, nil, nil)
}

// splitClustersWith is splitClusters with the controller's cached (Target)
// and uncached (TargetAPI) target clients passed through wrapTarget and
// wrapAPI when set, to make the target cluster answer errors.
func splitClustersWith(t *testing.T, ns string, cfg machine.Config, wrapTarget, wrapAPI func(client.Client) client.Client) (*testenv.Env, *controllertest.Harness) {
	t.Helper()
	target, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	s, err := sim.New(sim.Options{Client: target.Client, NodeMode: sim.NodeModeBuiltin, NodeResync: -1})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Start(ctx) }()

	if err := controllertest.Env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(controllertest.Env.Config, ctrl.Options{
		Scheme:     controllertest.Env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: ctrlconfig.ForTests(),
	})
	if err != nil {
		t.Fatal(err)
	}
	targetCluster, err := cluster.New(target.Config, func(o *cluster.Options) { o.Scheme = target.Scheme })
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(targetCluster); err != nil {
		t.Fatal(err)
	}
	targetClient, targetAPI := targetCluster.GetClient(), target.Client
	if wrapTarget != nil {
		targetClient = wrapTarget(targetClient)
	}
	if wrapAPI != nil {
		targetAPI = wrapAPI(targetAPI)
	}
	r := &machine.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Target: targetClient, TargetAPI: targetAPI,
		Drivers: map[string]driver.Driver{"sim": s}, Config: cfg,
		Recorder: mgr.GetEventRecorder("machine-controller"),
	}
	if err := r.SetupWithManager(ctx, mgr, targetCluster, 2); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	return target, &controllertest.Harness{T: t, NS: ns, Sim: s}
}
