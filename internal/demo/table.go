package demo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// snapshot is what the demo shows: the fleet, its Nodes and the workload.
type snapshot struct {
	machines []v1alpha1.Machine
	nodes    map[string]corev1.Node
	pods     map[string]int     // running pods per node
	workload *appsv1.Deployment // nil when the sample has none
}

// observe reads the fleet, and the workload when the sample has one.
func observe(ctx context.Context, c client.Client, workload bool) (*snapshot, error) {
	s := &snapshot{nodes: map[string]corev1.Node{}, pods: map[string]int{}}
	machines := &v1alpha1.MachineList{}
	if err := c.List(ctx, machines, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	s.machines = machines.Items
	sort.Slice(s.machines, func(i, j int) bool { return s.machines[i].Name < s.machines[j].Name })
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		s.nodes[n.Name] = n
	}
	if !workload {
		return s, nil
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"app": workloadName}); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
			s.pods[p.Spec.NodeName]++
		}
	}
	s.workload = &appsv1.Deployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: workloadName}, s.workload)
	return s, client.IgnoreNotFound(err)
}

// done reports whether the sample is fully up: every desired Machine
// Running on a Ready Node, and the workload (if any) available.
func (s *snapshot) done(replicas int) bool {
	running := 0
	for _, m := range s.machines {
		if m.Status.Phase != v1alpha1.PhaseRunning || m.Status.NodeRef == nil {
			continue
		}
		if n, ok := s.nodes[m.Status.NodeRef.Name]; ok && nodeReady(n) {
			running++
		}
	}
	w := s.workload
	return running == replicas && len(s.machines) == replicas &&
		(w == nil || w.Spec.Replicas != nil && w.Status.AvailableReplicas == *w.Spec.Replicas)
}

func (s *snapshot) print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tPHASE\tPROVIDER ID\tNODE\tNODE READY\tPODS")
	for _, m := range s.machines {
		node, ready, pods := "-", "-", "-"
		if m.Status.NodeRef != nil {
			node = m.Status.NodeRef.Name
			if n, ok := s.nodes[node]; ok {
				ready = fmt.Sprint(nodeReady(n))
				pods = fmt.Sprint(s.pods[node])
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Status.Phase, orDash(m.Spec.ProviderID), node, ready, pods)
	}
	_ = tw.Flush()
	if s.workload == nil {
		return
	}
	want := int32(0)
	if s.workload.Spec.Replicas != nil {
		want = *s.workload.Spec.Replicas
	}
	fmt.Fprintf(out, "workload %s: %d/%d pods available\n", workloadName, s.workload.Status.AvailableReplicas, want)
}

// diagnose says, for a person, why the sample is not up.
func (s *snapshot) diagnose(out io.Writer) {
	for _, m := range s.machines {
		if m.Status.Phase == v1alpha1.PhaseRunning {
			continue
		}
		fmt.Fprintf(out, "Machine %s is %s: %s\n", m.Name, m.Status.Phase, m.Status.LastOperation.Description)
		for _, c := range m.Status.Conditions {
			if c.Status != "True" {
				fmt.Fprintf(out, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	if s.workload == nil {
		return
	}
	for _, c := range s.workload.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			fmt.Fprintf(out, "workload %s: %s=%s %s\n", workloadName, c.Type, c.Status, strings.TrimSpace(c.Message))
		}
	}
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
