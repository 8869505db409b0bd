package safety

import "github.com/prometheus/client_golang/prometheus/testutil"

// SetListPageSize makes the orphan collection ask for pages of n VMs, and
// returns the function that restores the size.
func SetListPageSize(n int32) (restore func()) {
	old := listPageSize
	listPageSize = n
	return func() { listPageSize = old }
}

// OrphansFound is the orphan VMs found so far of a provider (the counter
// millwright_orphan_vms_found_total).
func OrphansFound(provider string) float64 {
	return testutil.ToFloat64(orphansFound.WithLabelValues(provider))
}
