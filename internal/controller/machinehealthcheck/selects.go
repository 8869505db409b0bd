package machinehealthcheck

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Selecting returns, sorted, the names of the health checks in m's
// namespace (not being deleted) whose selector picks m. The machine
// controller asks it: a Machine any health check picks is judged by the
// health checks alone (docs/health-checks.md).
func Selecting(ctx context.Context, c client.Reader, m *v1alpha1.Machine) ([]string, error) {
	list := &v1alpha1.MachineHealthCheckList{}
	if err := c.List(ctx, list, client.InNamespace(m.Namespace), client.UnsafeDisableDeepCopy); err != nil { // read only
		return nil, err
	}
	return selecting(list.Items, m), nil
}

func selecting(checks []v1alpha1.MachineHealthCheck, m *v1alpha1.Machine) []string {
	var names []string
	set := labels.Set(m.Labels)
	for i := range checks {
		if selects(&checks[i], set) {
			names = append(names, checks[i].Name)
		}
	}
	sort.Strings(names)
	return names
}

// selects reports whether a live health check picks a Machine with these
// labels. A selector the API server let through but that does not parse
// selects nothing (the health check's status says 0 expected).
func selects(mhc *v1alpha1.MachineHealthCheck, set labels.Set) bool {
	if !mhc.DeletionTimestamp.IsZero() {
		return false
	}
	sel, err := mhc.Spec.Selector.AsSelector()
	return err == nil && !sel.Empty() && sel.Matches(set)
}
