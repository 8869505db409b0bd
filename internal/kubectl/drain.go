package kubectl

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func newDrainCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Inspect the drain of a Machine's Node",
		Args:  cobra.NoArgs,
	}
	status := &cobra.Command{
		Use:               "status MACHINE",
		Short:             "Show where a Machine's drain is: the pods still on its Node and the PodDisruptionBudgets blocking them",
		Example:           `  kubectl millwright drain status web-6c8c966bf8-mppr6`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeArg(&v1alpha1.MachineList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, m, err := o.getMachine(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "Machine:  %s (%s)\n", m.Name, orDash(string(m.Status.Phase)))
			if m.Status.NodeRef == nil {
				fmt.Fprintln(o.Out, "Node:     - (the Machine has no Node: nothing to drain)")
				return nil
			}
			node := m.Status.NodeRef.Name
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "Node:     %s (unschedulable: %t)\n", node, n.Spec.Unschedulable)
			fmt.Fprintf(o.Out, "Drain:    %s\n", drainState(m))
			pods, err := mustLeave(ctx, c, m, node)
			if err != nil {
				return err
			}
			if len(pods.skipped) > 0 {
				fmt.Fprintf(o.Out, "Skipped:  %s (a MachineDrainRule or their drain label leaves them)\n", strings.Join(pods.skipped, ", "))
			}
			if len(pods.leaving) == 0 {
				fmt.Fprintln(o.Out, "Pods:     none left to move (DaemonSet and mirror pods stay)")
				return nil
			}
			fmt.Fprintln(o.Out, "Pods still on the Node:")
			tw := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  POD\tORDER\tPHASE\tBLOCKED BY")
			for _, lp := range pods.leaving {
				phase := string(lp.pod.Status.Phase)
				if lp.pod.DeletionTimestamp != nil {
					phase = "Terminating"
				}
				order := "-" // a pod waited for is never evicted: it has no order
				if !lp.waits {
					order = fmt.Sprint(lp.order)
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", podName(lp.pod), order, phase, pods.blockedBy(lp))
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(status)
	return cmd
}

// drainState says where the Machine's deletion, and so its drain, is.
func drainState(m *v1alpha1.Machine) string {
	d := m.Status.Deletion
	if m.DeletionTimestamp == nil || d == nil {
		return "not started (the Machine is not being deleted)"
	}
	s := fmt.Sprintf("step %s since %s", d.Step, d.StepStartTime.UTC().Format("2006-01-02T15:04:05Z"))
	if d.Drain != nil {
		s += fmt.Sprintf(", %d eviction round(s)", d.Drain.Attempts)
		if d.Drain.Order != nil {
			s += fmt.Sprintf(", evicting order %d", *d.Drain.Order)
		}
	}
	if d.ForceReason != "" {
		s += ", forced: " + d.ForceReason
	}
	if lo := m.Status.LastOperation; lo.Type == v1alpha1.OperationDrain {
		s += "; " + oneLine(lo.Description)
	}
	return s
}
