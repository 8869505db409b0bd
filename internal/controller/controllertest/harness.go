// Package controllertest is the harness of the controllers' envtest suites:
// a real kube-apiserver shared by a package's tests and, per test, a
// namespace, an in-process sim cloud registering self-Ready Nodes, and a
// manager running the controllers for that namespace only, which the test
// may stop and start again like a crash.
package controllertest

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/ctrlconfig"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// Env is the control plane shared by a package's tests (set by Run).
var Env *testenv.Env

// Run starts the control plane, runs the package's tests and stops it; a
// package's TestMain calls os.Exit(controllertest.Run(m)).
func Run(m *testing.M) int {
	var err error
	Env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := Env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping control plane:", err)
	}
	return code
}

// Options shape a Harness.
type Options struct {
	// Config edits the machine controller's configuration.
	Config func(*machine.Config)
	// Controllers registers further controllers (a MachineSet controller,
	// ...) with each manager the harness starts.
	Controllers func(ctx context.Context, mgr ctrl.Manager) error
	// Machine edits the machine controller before it is set up (a safety
	// Gate, an orphan hook, ...).
	Machine func(*machine.Reconciler)
	// Manager edits the options of each manager the harness starts (a
	// reconciliation timeout, ...).
	Manager func(*ctrl.Options)
}

// Harness is one test's world.
type Harness struct {
	T  *testing.T
	NS string
	// Prefix makes Machine (and so Node) names unique across tests, which
	// share one API server: Nodes are cluster-scoped.
	Prefix string
	Sim    *sim.Sim
	Config machine.Config

	opts    Options
	stopMgr context.CancelFunc
	mgrDone chan struct{}
}

var seq atomic.Int64

// TestConfig has timeouts short enough for tests and backoffs that retry fast.
func TestConfig() machine.Config {
	cfg := machine.DefaultConfig()
	cfg.BackoffBase = 200 * time.Millisecond
	cfg.BackoffCap = 2 * time.Second
	cfg.LongBackoffBase = time.Second
	cfg.LongBackoffCap = 5 * time.Second
	cfg.DriverCallTimeout = 10 * time.Second
	cfg.HealthResync = 5 * time.Second
	cfg.EvictionRetryInterval = time.Second
	return cfg
}

// New makes a Harness and starts its manager; everything stops when the test ends.
func New(t *testing.T, opts Options) *Harness {
	t.Helper()
	n := seq.Add(1)
	ns := fmt.Sprintf("t%d-%s", n, strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())))
	ns = strings.TrimRight(ns[:min(len(ns), 60)], "-")
	if err := Env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Options{Client: Env.Client, NodeMode: sim.NodeModeBuiltin, NodeResync: -1})
	if err != nil {
		t.Fatal(err)
	}
	simCtx, simCancel := context.WithCancel(context.Background())
	go func() { _ = s.Start(simCtx) }()
	h := &Harness{T: t, NS: ns, Prefix: fmt.Sprintf("t%d-", n), Sim: s, Config: TestConfig(), opts: opts}
	if opts.Config != nil {
		opts.Config(&h.Config)
	}
	h.StartManager()
	t.Cleanup(func() {
		h.StopManager()
		simCancel()
	})
	return h
}

// managerViews holds each harness manager's ownerindex.Views.
var managerViews sync.Map

// ViewsOf returns the ownerindex.Views of a manager the harness started,
// for the controllers Options.Controllers sets up: nil for another
// manager (they then read with a List).
func ViewsOf(mgr ctrl.Manager) *ownerindex.Views {
	if v, ok := managerViews.Load(mgr); ok {
		return v.(*ownerindex.Views)
	}
	return nil
}

// StartManager starts a manager with the machine controller (and
// Options.Controllers) for the harness's namespace.
func (h *Harness) StartManager() {
	h.T.Helper()
	opts := ctrl.Options{
		Scheme:     Env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{h.NS: {}}},
		Controller: ctrlconfig.ForTests(),
	}
	// The controllers read the owner index as the manager's do
	// (ownerindex.Views); ViewsOf gives them this manager's.
	v := &ownerindex.Views{}
	opts.Cache.NewInformer = v.NewInformer
	if h.opts.Manager != nil {
		h.opts.Manager(&opts)
	}
	mgr, err := ctrl.NewManager(Env.Config, opts)
	if err != nil {
		h.T.Fatal(err)
	}
	managerViews.Store(mgr, v)
	h.T.Cleanup(func() { managerViews.Delete(mgr) })
	ctx, cancel := context.WithCancel(context.Background())
	r := &machine.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Target: mgr.GetClient(), TargetAPI: Env.Client,
		Drivers:   map[string]driver.Driver{"sim": h.Sim},
		Namespace: h.NS,
		Config:    h.Config,
		Recorder:  mgr.GetEventRecorder("machine-controller"),
		Views:     v,
	}
	if h.opts.Machine != nil {
		h.opts.Machine(r)
	}
	if err := r.SetupWithManager(ctx, mgr, mgr, 4); err != nil {
		h.T.Fatal(err)
	}
	if h.opts.Controllers != nil {
		if err := h.opts.Controllers(ctx, mgr); err != nil {
			h.T.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			h.T.Errorf("manager: %v", err)
		}
	}()
	h.stopMgr, h.mgrDone = cancel, done
}

// StopManager stops the manager, as a crash would. A manager still
// stopping after stuckAfter has a worker that ignores its context: the
// goroutines are dumped to a file, since the manager's own error (its
// grace period ran out) does not say which.
func (h *Harness) StopManager() {
	if h.stopMgr == nil {
		return
	}
	h.stopMgr()
	select {
	case <-h.mgrDone:
	case <-time.After(stuckAfter):
		h.T.Errorf("the manager has not stopped %s after its context ended; goroutines in %s", stuckAfter, dumpGoroutines())
		<-h.mgrDone
	}
	h.stopMgr = nil
}

// stuckAfter is shorter than the manager's graceful shutdown timeout (30 s)
// so the dump shows the stuck worker before the manager gives up on it.
const stuckAfter = 20 * time.Second

// dumpGoroutines writes every goroutine's stack to a file kept after the
// test and returns its path.
func dumpGoroutines() string {
	f, err := os.CreateTemp("", "manager-stuck-*.txt")
	if err != nil {
		return "(not written: " + err.Error() + ")"
	}
	defer f.Close()
	_ = pprof.Lookup("goroutine").WriteTo(f, 2)
	return f.Name()
}

// SimSpec is a minimal sim providerSpec.
const SimSpec = `{"region":"local","zones":["local-a","local-b"]}`

// Class creates a sim MachineClass with the given providerSpec and a user
// data Secret.
func (h *Harness) Class(name, providerSpec string) *v1alpha1.MachineClass {
	h.T.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-userdata", Namespace: h.NS},
		StringData: map[string]string{"userData": "#!/bin/sh\njoin --name <<MACHINE_NAME>> --token <<BOOTSTRAP_TOKEN>>\n"},
	}
	h.Create(secret)
	class := &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS},
		Spec: v1alpha1.MachineClassSpec{
			Provider:     "sim",
			ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)},
			SecretRef:    &corev1.SecretReference{Name: secret.Name},
		},
	}
	h.Create(class)
	return class
}

// Machine creates a Machine named Prefix+name of the class.
func (h *Harness) Machine(name, class string, edit func(*v1alpha1.Machine)) *v1alpha1.Machine {
	h.T.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + name, Namespace: h.NS},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: class}},
	}
	if edit != nil {
		edit(m)
	}
	h.Create(m)
	return m
}

// VMs returns the sim's VMs of the Machine Prefix+name.
func (h *Harness) VMs(name string) []sim.VM {
	return h.Sim.Cloud().MachineVMs(h.NS, h.Prefix+name)
}
