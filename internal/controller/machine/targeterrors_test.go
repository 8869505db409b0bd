package machine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// answeringClient is a target client whose Delete and List answer fail's
// error when it returns one: a target cluster that is up but refuses.
type answeringClient struct {
	client.Client
	fail func(verb string, obj runtime.Object) error
}

func (c answeringClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.fail("delete", obj); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c answeringClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.fail("list", list); err != nil {
		return err
	}
	return c.Client.List(ctx, list, opts...)
}

// TestNodeDeletionForbiddenKeepsRetrying: the node deletion timeout gives
// up only on a target cluster that cannot be reached. A Node deletion the
// cluster answers Forbidden (missing RBAC) keeps the Machine, its error
// in status, past the timeout; once allowed, the Node and the Machine go.
func TestNodeDeletionForbiddenKeepsRetrying(t *testing.T) {
	const ns = "node-deletion-forbidden"
	const timeout = time.Second
	var (
		mu     sync.Mutex
		forbid = true
		calls  []time.Time // Node deletions answered Forbidden
	)
	forbidNodeDeletes := func(c client.Client) client.Client {
		return answeringClient{Client: c, fail: func(verb string, obj runtime.Object) error {
			if _, ok := obj.(*corev1.Node); !ok || verb != "delete" {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if !forbid {
				return nil
			}
			calls = append(calls, time.Now())
			return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n", errors.New("no RBAC"))
		}}
	}
	target, h := splitClustersWith(t, ns, testConfig(), forbidNodeDeletes, nil)
	h.Create(&v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", ProviderSpec: runtime.RawExtension{Raw: []byte(simSpec)}},
	})
	h.Machine("m", "c", func(m *v1alpha1.Machine) {
		m.Spec.Lifecycle.NodeDeletionTimeout = &metav1.Duration{Duration: timeout}
	})
	running := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	h.DeleteMachine("m")

	// The step starts before its first Node deletion, so a deletion a
	// timeout after the first is past the deadline; the reconcile after
	// the second such deletion saw the deadline passed, and a third
	// deletion proves it did not let the Machine go.
	h.Eventually(30*time.Second, "three Node deletions past the node deletion timeout", func() (bool, error) {
		err := controllertest.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(running), &v1alpha1.Machine{})
		if apierrors.IsNotFound(err) {
			return false, errors.New("the Machine went: the node deletion timeout gave up on a Forbidden answer")
		}
		mu.Lock()
		defer mu.Unlock()
		late := 0
		for _, c := range calls {
			if c.Sub(calls[0]) >= timeout {
				late++
			}
		}
		return late >= 3, nil
	})
	m := h.Get("m")
	if !controllerutil.ContainsFinalizer(m, v1alpha1.MachineFinalizer) {
		t.Fatalf("the Machine lost its finalizer on a Forbidden Node deletion")
	}
	if op := m.Status.LastOperation; !strings.Contains(op.Description, "forbidden") {
		t.Errorf("status.lastOperation does not show the Forbidden answer: %+v", op)
	}
	events := &corev1.EventList{}
	if err := controllertest.Env.Client.List(t.Context(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "NodeDeletionTimedOut" {
			t.Errorf("the node deletion timeout gave up on a Forbidden answer: %s", e.Message)
		}
	}

	mu.Lock()
	forbid = false
	mu.Unlock()
	h.WaitGone("m")
	if err := target.Client.Get(t.Context(), client.ObjectKey{Name: running.Status.NodeRef.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Node survived its Machine (err %v)", err)
	}
}

// TestForcedDrainSurvivesATransientOutage: one unavailable answer during a
// forced drain (an API server upgrade) does not skip it: the drain retries
// and deletes the Node's pods once the cluster answers. Only an outage as
// long as the drain timeout skips it (TestDeletionWithTheTargetClusterStoppedBeforeIt).
func TestForcedDrainSurvivesATransientOutage(t *testing.T) {
	const ns = "forced-drain-transient"
	var (
		mu       sync.Mutex
		failures int // pod lists still to answer 503
	)
	flaky := func(c client.Client) client.Client {
		return answeringClient{Client: c, fail: func(verb string, obj runtime.Object) error {
			if _, ok := obj.(*corev1.PodList); !ok || verb != "list" {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if failures == 0 {
				return nil
			}
			failures--
			return apierrors.NewServiceUnavailable("the API server is upgrading")
		}}
	}
	target, h := splitClustersWith(t, ns, testConfig(), nil, flaky)
	h.Create(&v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", ProviderSpec: runtime.RawExtension{Raw: []byte(simSpec)}},
	})
	h.Machine("m", "c", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.ForceDeletionAnnotation: "true"}
	})
	running := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	ctx := t.Context()
	if err := target.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: running.Status.NodeRef.Name,
			Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	if err := target.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	failures = 1
	mu.Unlock()
	h.DeleteMachine("m")
	h.WaitGone("m")

	mu.Lock()
	if failures != 0 {
		t.Errorf("the drain never met the unavailable answer")
	}
	mu.Unlock()
	if err := target.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the forced drain was skipped on one unavailable answer: pod %s stays (err %v)", pod.Name, err)
	}
	events := &corev1.EventList{}
	if err := controllertest.Env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "DrainSkipped" {
			t.Errorf("the forced drain was skipped on one unavailable answer: %s", e.Message)
		}
	}
}
