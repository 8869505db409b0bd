package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// cacheSyncWait bounds a readiness probe's wait for the caches: a probe
// must answer quickly, and an unsynced cache is simply not ready yet.
const cacheSyncWait = time.Second

// cacheSynced is ready once c has started and every informer in it has
// synced; before that the controllers would act on a partial view.
func cacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncWait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("caches have not synced")
		}
		return nil
	}
}

// driverAnswers is ready while d answers GetPluginInfo within timeout: a
// manager whose driver is gone cannot make progress on its Machines, and
// the probe makes that visible (kubectl get pods, alerts) instead of only
// in each Machine's status.
func driverAnswers(d driver.Driver, timeout time.Duration) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), timeout)
		defer cancel()
		if _, err := d.GetPluginInfo(ctx, &driver.GetPluginInfoRequest{}); err != nil {
			return fmt.Errorf("GetPluginInfo: %w", err)
		}
		return nil
	}
}
