package integration

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
)

// The Eviction API answers 409 Conflict not only when the pod's UID
// precondition fails (the pod was replaced: gone for the drain) but also
// when it could not update the PodDisruptionBudget's status for
// concurrent evictions. The API server retries that conflict itself and
// gives up only under heavy contention, which no test can bring about on
// demand, so the client here answers the first eviction with that
// conflict; everything else reaches the real API server. The pod is still
// running: the drain must not count it gone, and evicts it next round.
func TestDrainBudgetConflictIsNotAGonePod(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, true)
	guarded := map[string]string{"app": "db"}
	db0 := newPod(t, ns, node.Name, "db-0", withLabels(guarded))
	waitRunning(t, db0)
	newPDB(t, ns, guarded, 0, 1)

	real, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var conflicts atomic.Int32
	c := interceptor.NewClient(real, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if sub == "eviction" && conflicts.Add(1) == 1 {
				return apierrors.NewConflict(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "budget",
					errObjectModified)
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
	})

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, MaxEvictRetries: 3}
	res, err := drain.Step(t.Context(), c, status, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first step: %+v", res)
	if res.Done || res.Remaining != 1 {
		t.Fatalf("after a budget conflict: done=%v remaining=%d (%q); want the running pod still to drain", res.Done, res.Remaining, res.Message)
	}
	mustExistUntouched(t, db0)

	// The next rounds evict it, as they would any pod still there.
	stepUntilDone(t, status, opts, nil)
	mustBeGone(t, db0)
}

// errObjectModified is the API server's own wording of a lost update.
var errObjectModified = errorString("the object has been modified; please apply your changes to the latest version and try again")

type errorString string

func (e errorString) Error() string { return string(e) }

// The other 409: the pod was replaced by one of the same name (a
// StatefulSet's successor, on another Node since this one is cordoned)
// between the drain's look at the Node and its eviction. The UID
// precondition refuses the eviction; the pod the drain was after is gone,
// and its successor is left alone.
//
// Neither Node is kwok's: kwok deletes a pod whose deletion started by
// name, without the UID, so its delete of the replaced pod, late by a few
// milliseconds, removed the successor (a kubelet deletes with the UID).
// The test reports both pods Running itself: the Eviction API deletes a
// Pending pod under the same precondition, but retries the conflict for
// ten seconds first.
func TestDrainReplacedPodIsGone(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, false)
	other := newNode(t, false)
	web0 := newPod(t, ns, node.Name, "web-0")
	markRunning(t, web0)

	real, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var successor *corev1.Pod
	c := interceptor.NewClient(real, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if sub == "eviction" && successor == nil {
				if err := c.Delete(ctx, web0.DeepCopy(), client.GracePeriodSeconds(0)); err != nil {
					return err
				}
				waitGone(t, web0)
				successor = newPod(t, ns, other.Name, "web-0")
				markRunning(t, successor)
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
	})

	status := &v1alpha1.DrainStatus{}
	res, err := drain.Step(t.Context(), c, status, drain.Options{NodeName: node.Name})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || res.Remaining != 0 || res.Failed != 0 {
		t.Fatalf("after the pod was replaced: %+v; want it counted gone", res)
	}
	mustExistUntouched(t, successor)
}
