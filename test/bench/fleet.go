package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The benchmark's objects.
const (
	deploymentName = "bench"
	// classFast has no sim latency: scale-up measures Millwright, not the cloud.
	classFast = "bench-fast"
	// classSlow takes createLatency per VM create: the rolling update's target.
	classSlow = "bench-slow"
	// classSlowB is classSlow under another name: the target of the second
	// rolling update (rolling-update-started), so both policies are
	// measured on the same create latency.
	classSlowB    = "bench-slow-b"
	createLatency = 2 * time.Second
	poolLabel     = "bench.millwright.dev/pool"
)

// providerSpec is a sim providerSpec with no boot delay and, when latency
// is set, that much latency on every create.
func providerSpec(latency time.Duration) runtime.RawExtension {
	spec := `{"region":"local","zones":["local-a","local-b","local-c"],"instanceType":"sim.small"`
	if latency > 0 {
		spec += fmt.Sprintf(`,"faults":{"create":{"latency":%q}}`, latency.String())
	}
	return runtime.RawExtension{Raw: []byte(spec + "}")}
}

func machineClass(namespace, name string, latency time.Duration) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", ProviderSpec: providerSpec(latency)},
	}
}

// createClasses creates the three MachineClasses of the benchmark's fleet.
func (e *env) createClasses(ctx context.Context) error {
	for _, mc := range []*v1alpha1.MachineClass{
		machineClass(benchNamespace, classFast, 0),
		machineClass(benchNamespace, classSlow, createLatency),
		machineClass(benchNamespace, classSlowB, createLatency),
	} {
		if err := e.admin.Create(ctx, mc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating MachineClass %s: %w", mc.Name, err)
		}
	}
	return nil
}

// machineDeployment is the fleet: maxSurge 10%, maxUnavailable 0, so the
// rolling update replaces a tenth of it per wave and never goes below N.
func machineDeployment(replicas int32) *v1alpha1.MachineDeployment {
	labels := map[string]string{poolLabel: deploymentName}
	return &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: deploymentName},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: v1alpha1.LabelSelector{MatchLabels: labels},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.RollingUpdateStrategy,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{
					MaxSurge:       ptr.To(intstr.FromString(fmt.Sprintf("%d%%", maxSurgePercent))),
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				},
			},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: labels},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: classFast}},
			},
		},
	}
}

// observer is the benchmark's informer cache: watching is far cheaper for
// the API server than listing thousands of objects every second.
type observer struct {
	cache cache.Cache
	// fleet checks the replacement policy's bound at every Machine event.
	fleet *fleetWatch
	// nodeFlaps counts Node Ready → not Ready transitions (False or
	// Unknown) since the start. kwok Nodes only leave Ready when
	// kube-controller-manager finds their Lease too old (nothing here
	// marks them NotReady), so each is a heartbeat kwok failed to keep.
	nodeFlaps atomic.Int64
	// readyWaits are the new Nodes' waits for kwok to make them Ready.
	readyWaits *readyWaits
	// timeline, when asked for (-timeline), records Machines per
	// MachineSet over time.
	timeline *timeline
}

func (e *env) startObserver(ctx context.Context) (*observer, error) {
	return newObserver(ctx, e.cluster.RESTConfig(), e.scheme)
}

// newObserver starts the informers of the fleet's and the floor's
// namespaces, with the fleet bound check and the Node flap count on their
// events; they stop with ctx.
func newObserver(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (*observer, error) {
	c, err := cache.New(cfg, cache.Options{
		Scheme: scheme,
		DefaultNamespaces: map[string]cache.Config{
			benchNamespace: {}, floorNamespace: {},
		},
	})
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the observer's cache did not sync")
	}
	// Start the informers now, not at the first read inside a timed scenario.
	for _, l := range []client.ObjectList{&v1alpha1.MachineList{}, &corev1.NodeList{}, &v1alpha1.MachineDeploymentList{}} {
		if err := c.List(ctx, l); err != nil {
			return nil, err
		}
	}
	o := &observer{cache: c, readyWaits: newReadyWaits(), fleet: newFleetWatch(func(err error) {
		logf("!!! %v", err)
	})}
	if err := o.watchEvents(ctx); err != nil {
		return nil, err
	}
	return o, nil
}

// machines counts the fleet's Machines: all of them, and the Running ones
// of the given class. It only reads them: no deep copy of the fleet five
// times a second, which at 5000 Machines made the benchmark itself use as
// much CPU as the manager it measures, on the same two cores.
func (o *observer) machines(ctx context.Context, class string) (total, running int, phases map[v1alpha1.MachinePhase]int, err error) {
	var l v1alpha1.MachineList
	if err := o.cache.List(ctx, &l, client.InNamespace(benchNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, nil, err
	}
	phases = map[v1alpha1.MachinePhase]int{}
	for i := range l.Items {
		m := &l.Items[i]
		phases[m.Status.Phase]++
		if m.Status.Phase == v1alpha1.PhaseRunning && m.DeletionTimestamp == nil &&
			m.Spec.Class != nil && m.Spec.Class.Name == class {
			running++
		}
	}
	return len(l.Items), running, phases, nil
}

// waitFleet polls the cache until exactly want Machines exist, all Running
// on class, printing progress every 10 seconds.
func (o *observer) waitFleet(ctx context.Context, what string, want int, class string, timeout time.Duration) error {
	begin := time.Now()
	lastLog := begin
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		total, running, phases, err := o.machines(ctx, class)
		if err != nil {
			return false, err
		}
		last = fmt.Sprintf("%d Machines, %d Running on %s; phases %v", total, running, class, phases)
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			logf("%s: %s after %s", what, last, time.Since(begin).Round(time.Second))
		}
		return total == want && running == want, nil
	})
	if err != nil {
		return fmt.Errorf("not done within %s (%s): %w", timeout, last, err)
	}
	return nil
}

// logEventReasons prints how many Events of each reason the fleet's
// namespace holds: only the manager writes Events there, and they are a
// large share of its writes.
func (e *env) logEventReasons(ctx context.Context) {
	var l corev1.EventList
	if err := e.admin.List(ctx, &l, client.InNamespace(benchNamespace)); err != nil {
		logf("listing Events: %v", err)
		return
	}
	reasons := map[string]int{}
	for _, ev := range l.Items {
		reasons[ev.Reason]++
	}
	logf("Events in %s by reason: %v (%d in all)", benchNamespace, reasons, len(l.Items))
}
