package kubectl

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// fleetFilter picks Machines as get's flags say; empty fields match all.
type fleetFilter struct {
	deployment, set, class, phase string
}

// fleet is the Machines the filter picked, with their Nodes and how many
// pods run on each Node.
type fleet struct {
	machines []v1alpha1.Machine
	nodes    map[string]*corev1.Node
	pods     map[string]int
}

// readFleet lists the Machines of ns ("" for all namespaces), then the
// Nodes and the running pods: one list of each, whatever the fleet's size.
func readFleet(ctx context.Context, c client.Client, ns string, f fleetFilter) (*fleet, error) {
	sel := client.MatchingLabels{}
	if f.deployment != "" {
		sel[v1alpha1.MachineDeploymentNameLabel] = f.deployment
	}
	if f.set != "" {
		sel[v1alpha1.MachineSetNameLabel] = f.set
	}
	list := &v1alpha1.MachineList{}
	if err := c.List(ctx, list, client.InNamespace(ns), sel); err != nil {
		return nil, err
	}
	fl := &fleet{nodes: map[string]*corev1.Node{}, pods: map[string]int{}}
	for _, m := range list.Items {
		if f.class != "" && (m.Spec.Class == nil || m.Spec.Class.Name != f.class) {
			continue
		}
		if f.phase != "" && !strings.EqualFold(string(m.Status.Phase), f.phase) {
			continue
		}
		fl.machines = append(fl.machines, m)
	}
	sort.Slice(fl.machines, func(i, j int) bool {
		a, b := fl.machines[i], fl.machines[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	if len(fl.machines) == 0 {
		return fl, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		fl.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.MatchingFields{"status.phase": string(corev1.PodRunning)}); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() && p.Spec.NodeName != "" {
			fl.pods[p.Spec.NodeName]++
		}
	}
	return fl, nil
}

// node returns the Machine's Node, nil if it has none (yet, or any more).
func (fl *fleet) node(m *v1alpha1.Machine) *corev1.Node {
	if m.Status.NodeRef == nil {
		return nil
	}
	return fl.nodes[m.Status.NodeRef.Name]
}

// nodeReady is the Node's Ready condition status: True, False or Unknown.
func nodeReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status)
		}
	}
	return string(corev1.ConditionUnknown)
}

// machineReason is the one word that says why a Machine is where it is:
// its failure reason, the deletion step, or the reason of the first
// condition on its way to Running that does not hold.
func machineReason(m *v1alpha1.Machine) string {
	switch {
	case m.Status.FailureReason != "":
		return m.Status.FailureReason
	case !m.DeletionTimestamp.IsZero() && m.Status.Deletion != nil:
		return string(m.Status.Deletion.Step)
	}
	for _, t := range []string{v1alpha1.PausedCondition, v1alpha1.BootstrapReadyCondition, v1alpha1.InfrastructureReadyCondition,
		v1alpha1.NodeReadyCondition, v1alpha1.NodeHealthyCondition, v1alpha1.ReadyCondition} {
		c := meta.FindStatusCondition(m.Status.Conditions, t)
		if c == nil {
			continue
		}
		bad := c.Status != metav1.ConditionTrue
		if t == v1alpha1.PausedCondition {
			bad = c.Status == metav1.ConditionTrue
		}
		if bad {
			return c.Reason
		}
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
