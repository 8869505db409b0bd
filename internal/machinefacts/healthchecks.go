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
	return NewHealthCheckSelectors(checks).Selecting(labels.Set(m.Labels))
}

// HealthCheckSelects reports whether a live health check picks a Machine
// with these labels. A selector the API server let through but that does not parse
// selects nothing (the health check's status says 0 expected).
func HealthCheckSelects(mhc *v1alpha1.MachineHealthCheck, set labels.Set) bool {
	sel, ok := HealthCheckSelector(mhc)
	return ok && sel.Matches(set)
}

// HealthCheckSelector is the selector of a health check that selects
// anything (HealthCheckSelects): parsed once, it is asked of every
// Machine of a fleet without parsing it again for each.
func HealthCheckSelector(mhc *v1alpha1.MachineHealthCheck) (labels.Selector, bool) {
	if !mhc.DeletionTimestamp.IsZero() {
		return nil, false
	}
	sel, err := mhc.Spec.Selector.AsSelector()
	if err != nil || sel.Empty() {
		return nil, false
	}
	return sel, true
}

// HealthCheckSelectors are the selectors of health checks, each parsed
// once, for HealthChecksSelecting asked of many Machines.
type HealthCheckSelectors struct {
	names []string
	sels  []labels.Selector
}

// NewHealthCheckSelectors parses the selectors of the checks that select
// anything, in the order of their names.
func NewHealthCheckSelectors(checks []v1alpha1.MachineHealthCheck) HealthCheckSelectors {
	var s HealthCheckSelectors
	order := make([]int, len(checks))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return checks[order[a]].Name < checks[order[b]].Name })
	for _, i := range order {
		if sel, ok := HealthCheckSelector(&checks[i]); ok {
			s.names = append(s.names, checks[i].Name)
			s.sels = append(s.sels, sel)
		}
	}
	return s
}

// Selecting returns, sorted, the names of the checks picking a Machine
// with these labels (HealthChecksSelecting).
func (s HealthCheckSelectors) Selecting(set labels.Set) []string {
	var names []string
	for i, sel := range s.sels {
		if sel.Matches(set) {
			names = append(names, s.names[i])
		}
	}
	return names
}
