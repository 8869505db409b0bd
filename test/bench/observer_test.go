package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// startTestObserver starts an API server with the fleet's and the floor's
// namespaces, and an observer of it; both stop with the test.
func startTestObserver(t *testing.T) (context.Context, client.Client, *observer) {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range []string{benchNamespace, floorNamespace} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	o, err := newObserver(ctx, env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, env.Client, o
}

// The observer feeds every Machine event of the fleet's namespace, and
// none of the floor's, to the bound check: on a real API server, a
// Machine being deleted (held by a finalizer) counts under
// TerminationComplete and not under TerminationStarted.
func TestObserverChecksTheFleetBoundAtEveryEvent(t *testing.T) {
	ctx, c, o := startTestObserver(t)
	machine := func(ns, name string, finalizers ...string) {
		t.Helper()
		m := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
			Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: classFast}},
		}
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// waitPeak waits until the observer has seen the fleet reach want.
	waitPeak := func(want fleetCount) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			_, peak, _ := o.fleet.result()
			return peak == want, nil
		})
		if err != nil {
			_, peak, _ := o.fleet.result()
			t.Fatalf("largest fleet %+v, want %+v", peak, want)
		}
	}

	o.fleet.reset(boundFor(2, 2, policyStarted)) // limit 3
	for i := range 5 {
		machine(floorNamespace, fmt.Sprintf("floor-%d", i)) // not the fleet
	}
	machine(benchNamespace, "a", "bench.millwright.dev/hold")
	machine(benchNamespace, "b")
	machine(benchNamespace, "c")
	waitPeak(fleetCount{All: 3, NotDeleting: 3})
	held := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: "a"}}
	if err := c.Delete(ctx, held); err != nil {
		t.Fatal(err)
	}
	machine(benchNamespace, "d") // 4 objects, 3 not being deleted: within TerminationStarted's bound
	waitPeak(fleetCount{All: 4, NotDeleting: 3})
	if _, _, err := o.fleet.result(); err != nil {
		t.Fatalf("TerminationStarted: %v", err)
	}

	o.fleet.reset(boundFor(2, 2, policyComplete))
	machine(benchNamespace, "e") // 5 objects: over TerminationComplete's 3
	waitPeak(fleetCount{All: 5, NotDeleting: 4})
	if _, _, err := o.fleet.result(); err == nil || !strings.Contains(err.Error(), "5 Machine objects > replicas 2 + maxSurge 1") {
		t.Fatalf("TerminationComplete with 5 Machines: %v, want a violation naming 5 Machine objects", err)
	}

	// Release the held Machine: its delete event leaves 4.
	if err := c.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil {
		t.Fatal(err)
	}
	held.Finalizers = nil
	if err := c.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	o.fleet.reset(boundFor(3, 3, policyComplete)) // limit 4
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		o.fleet.mu.Lock()
		defer o.fleet.mu.Unlock()
		return o.fleet.countLocked() == fleetCount{All: 4, NotDeleting: 4}, nil
	})
	if err != nil {
		t.Fatalf("the deleted Machine is still counted: %v", err)
	}
}

// The observer's Node informer records a new Node's wait for Ready, from
// the times the API server has.
func TestObserverRecordsANewNodesWaitForReady(t *testing.T) {
	ctx, c, o := startTestObserver(t)
	start := time.Now()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	readyAt := n.CreationTimestamp.Add(3 * time.Second)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)}}
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	var got *readyWaitFigures
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got = o.readyWaits.between(start, readyAt.Add(time.Second))
		return got != nil, nil
	})
	if err != nil || *got != (readyWaitFigures{Nodes: 1, P50: 3, P99: 3, Max: 3}) {
		t.Fatalf("the new Node's wait: %+v (%v), want one of 3 s", got, err)
	}
}
