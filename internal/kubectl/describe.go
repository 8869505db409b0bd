package kubectl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func newDescribeCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe machine NAME",
		Short: "Show a Machine's timeline: every step it went through, when, how long each took, and what it waits for now",
		Example: `  kubectl millwright describe machine web-6c8c966bf8-mppr6
  kubectl millwright describe mach web-6c8c966bf8-mppr6 -n fleet`,
		Args: cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []string{"machine"}, cobra.ShellCompDirectiveNoFileComp
			}
			return o.completeArg(&v1alpha1.MachineList{})(cmd, args[1:], s)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "machine", "machines", "mach", "machine.machine.millwright.dev":
			default:
				return fmt.Errorf("describe knows Machines only: %q is not a Machine (kubectl describe shows the other kinds)", args[0])
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			return o.describeMachine(cmd.Context(), c, ns, args[1])
		},
	}
	return cmd
}

func (o *Options) describeMachine(ctx context.Context, c client.Client, ns, name string) error {
	m := &v1alpha1.Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		return err
	}
	var node *corev1.Node
	if m.Status.NodeRef != nil {
		n := &corev1.Node{}
		err := c.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, n)
		switch {
		case err == nil:
			node = n
		case !apierrors.IsNotFound(err) && !skippable(err):
			return err
		}
	}
	events, err := eventsAbout(ctx, c, ns, m.UID)
	if err != nil {
		return err
	}
	var leaving drainPods
	if node != nil && m.Status.Deletion != nil && m.Status.Deletion.Step == v1alpha1.StepDrain {
		if leaving, err = mustLeave(ctx, c, m, node.Name); err != nil && !skippable(err) {
			return err
		}
	}
	w := o.Out
	fmt.Fprintf(w, "Name:         %s\n", m.Name)
	fmt.Fprintf(w, "Namespace:    %s\n", m.Namespace)
	fmt.Fprintf(w, "Phase:        %s\n", orDash(string(m.Status.Phase)))
	fmt.Fprintf(w, "Reason:       %s\n", orDash(machineReason(m)))
	if m.Spec.Class != nil {
		fmt.Fprintf(w, "Class:        %s\n", m.Spec.Class.Name)
	}
	if r := m.Spec.InfrastructureRef; r != nil {
		fmt.Fprintf(w, "Infra:        %s %s\n", r.Kind, r.Name)
	}
	fmt.Fprintf(w, "Owner:        %s\n", owner(m))
	fmt.Fprintf(w, "Provider ID:  %s\n", orDash(m.Spec.ProviderID))
	nodeLine := "-"
	if m.Status.NodeRef != nil {
		nodeLine = m.Status.NodeRef.Name
		switch {
		case node == nil:
			nodeLine += " (gone)"
		default:
			nodeLine += " (Ready " + nodeReady(node) + ")"
		}
	} else if m.Status.NodeName != "" {
		nodeLine = m.Status.NodeName + " (not registered yet)"
	}
	fmt.Fprintf(w, "Node:         %s\n", nodeLine)
	if m.Status.FailureReason != "" {
		fmt.Fprintf(w, "Failure:      %s: %s\n", m.Status.FailureReason, m.Status.FailureMessage)
	}
	fmt.Fprintln(w, "Timeline:")
	printTimeline(w, timeline(m, node, events), m.CreationTimestamp.Time)
	fmt.Fprintf(w, "Waiting for:  %s\n", waitingFor(m, node, leaving, o.Now()))
	return nil
}

// printTimeline writes the steps with their time, the time since the step
// before (how long that step took) and since the Machine was created.
func printTimeline(w io.Writer, steps []step, created time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TIME\tAFTER\tSINCE CREATED\tSTEP\tDETAIL")
	prev := created
	for _, s := range steps {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", s.at.UTC().Format(time.RFC3339), "+"+shortDuration(s.at.Sub(prev)),
			shortDuration(s.at.Sub(created)), s.what, orDash(oneLine(s.detail)))
		prev = s.at
	}
	_ = tw.Flush()
}

// shortDuration is a duration to the second, negative ones (clock skew
// between the API server and a recorder) as 0s.
func shortDuration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return d.Truncate(time.Second).String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// owner names the MachineSet and MachineDeployment the Machine belongs to.
func owner(m *v1alpha1.Machine) string {
	var parts []string
	if ref := metav1.GetControllerOf(m); ref != nil {
		parts = append(parts, ref.Kind+" "+ref.Name)
	}
	if d := m.Labels[v1alpha1.MachineDeploymentNameLabel]; d != "" {
		parts = append(parts, "MachineDeployment "+d)
	}
	if len(parts) == 0 {
		return "none (nothing replaces this Machine)"
	}
	return strings.Join(parts, ", ")
}

// waitingFor says what the Machine waits for now, from its phase and the
// fields behind it (docs/machine-phases.md).
func waitingFor(m *v1alpha1.Machine, node *corev1.Node, leaving drainPods, now time.Time) string {
	conds := m.Status.Conditions
	if c := meta.FindStatusCondition(conds, v1alpha1.PausedCondition); c != nil && c.Status == metav1.ConditionTrue {
		return "nothing until resumed: " + oneLine(c.Message)
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.PreservedCondition); c != nil && c.Status == metav1.ConditionTrue && m.DeletionTimestamp.IsZero() {
		// A preserved Machine waits for nothing but the end of its
		// preservation (docs/preservation.md).
		return "the end of its preservation (removing the annotation that asked ends it now): " + oneLine(c.Message)
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.InterruptedCondition); c != nil && c.Status == metav1.ConditionTrue && m.DeletionTimestamp.IsZero() {
		// docs/interruptions.md: replaced first, then deleted.
		at := "at a time it did not say"
		if d := m.Status.InterruptionDeadline; d != nil {
			at = "in " + duration.HumanDuration(d.Sub(now)) + " (" + d.UTC().Format(time.RFC3339) + ")"
		}
		if metav1.GetControllerOf(m) == nil {
			return "a person: its provider takes the VM away " + at + ", and a Machine without an owner is not replaced: " + oneLine(c.Message)
		}
		return "its MachineSet to create its replacement and delete it: its provider takes the VM away " + at + ": " + oneLine(c.Message)
	}
	lastOp := oneLine(m.Status.LastOperation.Description)
	switch m.Status.Phase {
	case v1alpha1.PhaseTerminating:
		return waitingInDeletion(m, leaving, lastOp)
	case v1alpha1.PhaseFailed:
		if metav1.GetControllerOf(m) == nil {
			return "a person: a Failed Machine without an owner is not replaced; delete it"
		}
		return "its MachineSet to delete and replace it"
	case v1alpha1.PhaseUnknown:
		since := "-"
		if m.Status.UnhealthySince != nil {
			since = duration.HumanDuration(now.Sub(m.Status.UnhealthySince.Time))
		}
		return fmt.Sprintf("its Node to recover (unhealthy for %s); the Machine fails after the health timeout (spec.lifecycle.healthTimeout, default the manager's --machine-health-timeout)", since)
	case v1alpha1.PhaseRunning:
		return "nothing: Running"
	case v1alpha1.PhaseProvisioned:
		switch {
		case node != nil:
			return "Node " + node.Name + " to become Ready"
		case m.Status.NodeName != "":
			return "Node " + m.Status.NodeName + " to register"
		}
		return "its Node to register (the creation timeout runs from the Machine's creation)"
	case v1alpha1.PhaseCrashLoopBackOff:
		return "the next create attempt after the backoff: " + lastOp
	case v1alpha1.PhaseProvisioning:
		if lastOp != "" {
			return "the VM to be created: " + lastOp
		}
		return "the VM to be created"
	case v1alpha1.PhasePending:
		var missing []string
		for _, c := range conds {
			if c.Status != metav1.ConditionTrue && c.Type != v1alpha1.PausedCondition {
				missing = append(missing, c.Type+": "+oneLine(c.Message))
			}
		}
		sort.Strings(missing)
		if len(missing) == 0 {
			return "the machine controller to pick it up"
		}
		return "prerequisites: " + strings.Join(missing, "; ")
	}
	return "the machine controller to reconcile it (no phase yet)"
}

func waitingInDeletion(m *v1alpha1.Machine, leaving drainPods, lastOp string) string {
	d := m.Status.Deletion
	if d == nil {
		return "the machine controller to start the deletion"
	}
	hooks := func(prefix string) string {
		var keys []string
		for k := range m.Annotations {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		return strings.Join(keys, ", ")
	}
	switch d.Step {
	case v1alpha1.StepPreDrainHooks:
		return "these pre-drain hook annotations to be removed: " + hooks(v1alpha1.PreDrainHookAnnotationPrefix)
	case v1alpha1.StepPreTerminateHooks:
		return "these pre-terminate hook annotations to be removed: " + hooks(v1alpha1.PreTerminateHookAnnotationPrefix)
	case v1alpha1.StepCordon:
		return "the Node to be cordoned"
	case v1alpha1.StepDrain:
		return "the drain: " + summary(leaving)
	case v1alpha1.StepDeleteInfrastructure:
		return "the VM to be deleted: " + lastOp
	case v1alpha1.StepDeleteNode:
		return "the Node to be deleted"
	}
	return lastOp
}
