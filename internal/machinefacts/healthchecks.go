package machinefacts

import (
	"sort"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// HealthChecksSelecting returns, sorted, the names of the health checks
// (those not being deleted) whose selector picks m. A Machine any health
// check picks is judged by the health checks alone (docs/health-checks.md):
// the machine controller asks it of the health checks in m's namespace,
// and so do the health checks themselves.
func HealthChecksSelecting(checks []v1alpha1.MachineHealthCheck, m *v1alpha1.Machine) []string {
	var names []string
	set := labels.Set(m.Labels)
	for i := range checks {
		if HealthCheckSelects(&checks[i], set) {
			names = append(names, checks[i].Name)
		}
	}
	sort.Strings(names)
	return names
}

// HealthCheckSelects reports whether a live health check picks a Machine
// with these labels. A selector the API server let through but that does not parse
// selects nothing (the health check's status says 0 expected).
func HealthCheckSelects(mhc *v1alpha1.MachineHealthCheck, set labels.Set) bool {
	if !mhc.DeletionTimestamp.IsZero() {
		return false
	}
	sel, err := mhc.Spec.Selector.AsSelector()
	return err == nil && !sel.Empty() && sel.Matches(set)
}
