package simserver

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// nodeCacheWaitLog is how often the sim says it still waits for the Node
// cache's first list.
const nodeCacheWaitLog = 30 * time.Second

// newNodeCache makes the informer cache of Nodes the sim reads its Nodes
// from (sim.Options.NodeReader). Read by GETs, a resync of 5000 VMs was
// 5000 requests every 5 minutes, some 11 per replacement of a 5000-Machine
// rolling update (docs/benchmarks.md, "Who reads"). Managed fields are
// dropped: the sim reads labels, the providerID and conditions only.
//
// The cache knows the Node kind without asking the cluster, so that a sim
// whose cluster is not reachable yet still starts and serves the driver.
func newNodeCache(cfg *rest.Config) (cache.Cache, error) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	c, err := cache.New(cfg, cache.Options{
		Scheme:           clientgoscheme.Scheme,
		Mapper:           mapper,
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("node cache: %w", err)
	}
	// Ask for the informer now, so that the cache's start lists Nodes and
	// WaitForCacheSync waits for that list.
	if _, err := c.GetInformer(context.Background(), &corev1.Node{}); err != nil {
		return nil, fmt.Errorf("node cache: %w", err)
	}
	return c, nil
}

// waitForNodeCache waits until the cache holds every Node, or ctx ends;
// meanwhile it says, every nodeCacheWaitLog, that it waits.
func waitForNodeCache(ctx context.Context, c cache.Cache, log *slog.Logger) {
	for {
		wctx, cancel := context.WithTimeout(ctx, nodeCacheWaitLog)
		synced := c.WaitForCacheSync(wctx)
		cancel()
		if synced || ctx.Err() != nil {
			return
		}
		log.Info("Nodes wait for the Node cache's first list: is the cluster reachable, and may the sim list and watch Nodes (docs/security.md)?")
	}
}
