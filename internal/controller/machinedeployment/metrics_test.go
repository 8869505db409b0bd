package machinedeployment

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// The rollout gauges say what each MachineDeployment's status says, and a
// True Frozen condition reads 1.
func TestRolloutGauges(t *testing.T) {
	md := func(name string, spec, replicas, updated, available int32, frozen bool) *v1alpha1.MachineDeployment {
		d := &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		d.Spec.Replicas = spec
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = replicas, updated, available
		if frozen {
			d.Status.Conditions = []metav1.Condition{{Type: v1alpha1.FrozenCondition, Status: metav1.ConditionTrue}}
		}
		return d
	}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).
		WithObjects(md("web", 3, 4, 1, 3, false), md("db", 2, 2, 2, 2, true)).Build()
	want := `
# HELP millwright_machinedeployment_available_replicas Machines of a MachineDeployment Running for at least minReadySeconds (status.availableReplicas).
# TYPE millwright_machinedeployment_available_replicas gauge
millwright_machinedeployment_available_replicas{deployment="db",namespace="ns"} 2
millwright_machinedeployment_available_replicas{deployment="web",namespace="ns"} 3
# HELP millwright_machinedeployment_frozen 1 while the safety controller freezes a MachineDeployment's scale-up (its Frozen condition is True), else 0.
# TYPE millwright_machinedeployment_frozen gauge
millwright_machinedeployment_frozen{deployment="db",namespace="ns"} 1
millwright_machinedeployment_frozen{deployment="web",namespace="ns"} 0
# HELP millwright_machinedeployment_replicas Machines of all a MachineDeployment's MachineSets (status.replicas).
# TYPE millwright_machinedeployment_replicas gauge
millwright_machinedeployment_replicas{deployment="db",namespace="ns"} 2
millwright_machinedeployment_replicas{deployment="web",namespace="ns"} 4
# HELP millwright_machinedeployment_spec_replicas Machines a MachineDeployment wants (spec.replicas).
# TYPE millwright_machinedeployment_spec_replicas gauge
millwright_machinedeployment_spec_replicas{deployment="db",namespace="ns"} 2
millwright_machinedeployment_spec_replicas{deployment="web",namespace="ns"} 3
# HELP millwright_machinedeployment_updated_replicas Machines made from a MachineDeployment's current template (status.updatedReplicas).
# TYPE millwright_machinedeployment_updated_replicas gauge
millwright_machinedeployment_updated_replicas{deployment="db",namespace="ns"} 2
millwright_machinedeployment_updated_replicas{deployment="web",namespace="ns"} 1
`
	if err := testutil.CollectAndCompare(Collectors(c)[0], strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(Collectors(c)[0]); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
