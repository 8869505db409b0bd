package machinehealthcheck

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A health check's remediation counter exists at 0 before its first
// remediation (so increase() counts that one), and a deleted health
// check's series go.
func TestHealthCheckSeriesLifecycle(t *testing.T) {
	exportCounters("ns-metrics", "web", "owner")
	if got := testutil.ToFloat64(remediationsStarted.WithLabelValues("ns-metrics", "web", "owner")); got != 0 {
		t.Fatalf("new counter = %v, want 0", got)
	}
	shortCircuited.WithLabelValues("ns-metrics", "web").Set(1)
	before := testutil.CollectAndCount(remediationsStarted) + testutil.CollectAndCount(shortCircuited)
	forgetMetrics("ns-metrics", "web")
	after := testutil.CollectAndCount(remediationsStarted) + testutil.CollectAndCount(shortCircuited)
	if before-after != 2 {
		t.Errorf("forgetting the health check removed %d series, want 2 (its counter and its gauge)", before-after)
	}
}
