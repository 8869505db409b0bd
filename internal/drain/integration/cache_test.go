package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// The manager reads pods from a controller-runtime cache, where selecting
// by spec.nodeName needs the index drain exports; with it registered, Step
// works on a cached client, and a cache briefly behind the API server (an
// evicted pod not yet seen as terminating) does no harm.
func TestDrainWithCachedClient(t *testing.T) {
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := informers.IndexField(t.Context(), &corev1.Pod{}, drain.PodNodeNameIndex, drain.IndexPodNodeName); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(t.Context()) {
		t.Fatal("cache did not sync")
	}
	cached, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}

	ns := newNamespace(t)
	node := newNode(t, true)
	other := newNode(t, true)
	a := newPod(t, ns, node.Name, "a")
	b := newPod(t, ns, node.Name, "b")
	elsewhere := newPod(t, ns, other.Name, "elsewhere")
	waitRunning(t, a, b, elsewhere)
	testenv.Eventually(t, timeout, "the cache to see the pods", func() (bool, error) {
		var pods corev1.PodList
		err := cached.List(ctx, &pods, client.MatchingFields{drain.PodNodeNameIndex: node.Name})
		return len(pods.Items) == 2, err
	})

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name}
	evicted := 0
	testenv.Eventually(t, timeout, "the drain on the cached client to finish", func() (bool, error) {
		res, err := drain.Step(ctx, cached, status, opts)
		evicted += res.Evicted
		return res.Done, err
	})
	if evicted < 2 {
		t.Errorf("evicted %d times, want at least both pods", evicted)
	}
	mustBeGone(t, a, b)
	mustExistUntouched(t, elsewhere)
}
