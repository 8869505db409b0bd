package kubectl_test

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// fleetFixture is a fleet with a Machine in most phases: two on Nodes
// (one Ready with two running pods, one not), one waiting for its Node,
// one Pending and one Failed. The two on Nodes carry the capacity type
// their driver reported, spot and on-demand.
func fleetFixture(t *testing.T, ns string) {
	namespace(t, ns)
	node(t, "golden-node-a", corev1.ConditionTrue, false)
	node(t, "golden-node-b", corev1.ConditionFalse, false)
	pod(t, ns, "running-1", "golden-node-a", corev1.PodRunning, nil, "")
	pod(t, ns, "running-2", "golden-node-a", corev1.PodRunning, nil, "")
	pod(t, ns, "pending", "golden-node-a", corev1.PodPending, nil, "")
	pod(t, ns, "running-3", "golden-node-b", corev1.PodRunning, nil, "")
	now := time.Now()
	machine(t, ns, "web-aaaaa", "small", "web", "web-111", "sim://r/a/vm-1", func(m *v1alpha1.Machine) {
		m.Status.Phase = v1alpha1.PhaseRunning
		m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: "golden-node-a"}
		m.Status.Conditions = []metav1.Condition{
			cond(v1alpha1.InfrastructureReadyCondition, "True", "Provisioned", "", now),
			cond(v1alpha1.NodeReadyCondition, "True", "NodeReady", "", now),
			cond(v1alpha1.ReadyCondition, "True", "Running", "", now)}
		m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationHealthCheck, State: v1alpha1.OperationSucceeded,
			Description: "Node is Ready", LastUpdateTime: metav1.NewTime(now)}
	})
	machine(t, ns, "web-bbbbb", "small", "web", "web-111", "sim://r/b/vm-2", func(m *v1alpha1.Machine) {
		m.Status.Phase = v1alpha1.PhaseUnknown
		m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: "golden-node-b"}
		m.Status.UnhealthySince = &metav1.Time{Time: now}
		m.Status.Conditions = []metav1.Condition{
			cond(v1alpha1.InfrastructureReadyCondition, "True", "Provisioned", "", now),
			cond(v1alpha1.NodeReadyCondition, "False", "NodeNotReady", "Node golden-node-b is not Ready", now)}
	})
	for name, ct := range map[string]string{"web-aaaaa": driver.CapacityTypeSpot, "web-bbbbb": driver.CapacityTypeOnDemand} {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		labels := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+driver.CapacityTypeLabel+`":"`+ct+`"}}}`))
		if err := controllertest.Env.Client.Patch(bg, m, labels); err != nil {
			t.Fatal(err)
		}
	}
	machine(t, ns, "web-ccccc", "large", "web", "web-222", "sim://r/a/vm-3", func(m *v1alpha1.Machine) {
		m.Status.Phase = v1alpha1.PhaseProvisioned
		m.Status.Conditions = []metav1.Condition{
			cond(v1alpha1.InfrastructureReadyCondition, "True", "Provisioned", "", now),
			cond(v1alpha1.NodeReadyCondition, "False", "NodeNotFound", "no Node yet", now)}
	})
	machine(t, ns, "db-ddddd", "small", "db", "db-333", "", func(m *v1alpha1.Machine) {
		m.Status.Phase = v1alpha1.PhasePending
		m.Status.Conditions = []metav1.Condition{
			cond(v1alpha1.BootstrapReadyCondition, "False", "SecretNotFound", "Secret small-userdata not found", now)}
	})
	machine(t, ns, "db-eeeee", "small", "db", "db-333", "", func(m *v1alpha1.Machine) {
		m.Status.Phase = v1alpha1.PhaseFailed
		m.Status.FailureReason, m.Status.FailureMessage = "CreationTimeout", "no Node within 20m"
	})
}

func TestGetTables(t *testing.T) {
	const ns = "golden-fleet"
	fleetFixture(t, ns)
	c := newCLI(t, ns)
	// Ages are measured from a clock 20m30s after the newest Machine: the
	// fixture's creation times lie within seconds, all show 20m.
	c.now = latest(t, ns).Add(20*time.Minute + 30*time.Second)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"get", []string{"get"}},
		{"get-wide", []string{"get", "machines", "-o", "wide"}},
		{"get-deployment", []string{"get", "--deployment", "web"}},
		{"get-phase-class", []string{"get", "--phase", "running", "--class", "small"}},
		{"get-all-namespaces-set", []string{"get", "-A", "--set", "db-333"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			golden(t, tc.golden, c.ok(tc.args...))
		})
	}

	t.Run("json and yaml", func(t *testing.T) {
		for _, format := range []string{"json", "yaml"} {
			out := c.ok("get", "--deployment", "db", "-o", format)
			list := &v1alpha1.MachineList{}
			var err error
			if format == "json" {
				err = json.Unmarshal([]byte(out), list)
			} else {
				err = yaml.Unmarshal([]byte(out), list)
			}
			if err != nil {
				t.Fatalf("-o %s: %v\n%s", format, err, out)
			}
			if list.Kind != "MachineList" || len(list.Items) != 2 || list.Items[0].Kind != "Machine" ||
				list.Items[0].Name != "db-ddddd" || list.Items[1].Status.FailureReason != "CreationTimeout" {
				t.Errorf("-o %s: want a MachineList of db-ddddd and the Failed db-eeeee, with kinds, got\n%s", format, out)
			}
		}
	})

	t.Run("nothing matches", func(t *testing.T) {
		out, errOut, err := c.run(bg, "get", "--phase", "Terminating")
		if err != nil || out != "" || errOut != "No Machines found in golden-fleet namespace.\n" {
			t.Errorf("got %v, stdout %q, stderr %q", err, out, errOut)
		}
	})
}
