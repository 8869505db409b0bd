package kubectl

import (
	"fmt"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func newGetCommand(o *Options) *cobra.Command {
	var f fleetFilter
	var output string
	var all bool
	cmd := &cobra.Command{
		Use:   "get [machines]",
		Short: "Show the fleet: each Machine with its phase, reason, age, providerID, Node, Node readiness and pods",
		Example: `  kubectl millwright get
  kubectl millwright get --deployment web --phase Running -o wide
  kubectl millwright get -A -o yaml`,
		Args:      cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs),
		ValidArgs: []string{"machines", "machine", "mach"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "wide", "json", "yaml"); err != nil {
				return err
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			if all {
				ns = ""
			}
			fl, err := readFleet(cmd.Context(), c, ns, f)
			if err != nil {
				return err
			}
			if output == "json" || output == "yaml" {
				return printObject(o.Out, output, &v1alpha1.MachineList{Items: fl.machines})
			}
			if len(fl.machines) == 0 {
				where := "in " + ns + " namespace"
				if all {
					where = "in any namespace"
				}
				fmt.Fprintf(o.ErrOut, "No Machines found %s.\n", where)
				return nil
			}
			o.printFleet(fl, output == "wide", all)
			return nil
		},
	}
	cmd.Flags().StringVar(&f.deployment, "deployment", "", "Only the Machines of this MachineDeployment.")
	cmd.Flags().StringVar(&f.set, "set", "", "Only the Machines of this MachineSet.")
	cmd.Flags().StringVar(&f.class, "class", "", "Only the Machines of this MachineClass.")
	cmd.Flags().StringVar(&f.phase, "phase", "", "Only the Machines in this phase (Pending, Provisioning, CrashLoopBackOff, Provisioned, Running, Unknown, Failed, Terminating).")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Machines of every namespace.")
	addOutputFlag(cmd, &output, "wide", "json", "yaml")
	_ = cmd.RegisterFlagCompletionFunc("deployment", o.completeNames(&v1alpha1.MachineDeploymentList{}))
	_ = cmd.RegisterFlagCompletionFunc("set", o.completeNames(&v1alpha1.MachineSetList{}))
	_ = cmd.RegisterFlagCompletionFunc("class", o.completeNames(&v1alpha1.MachineClassList{}))
	_ = cmd.RegisterFlagCompletionFunc("phase", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"Pending", "Provisioning", "CrashLoopBackOff", "Provisioned", "Running", "Unknown", "Failed", "Terminating"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// printFleet writes the fleet table: the columns of the demo's table plus
// reason and age; wide adds the owners, the class and the last operation.
// CAPACITY, the capacity type the Machine's driver reported (spot or
// on-demand, docs/writing-a-driver.md), is shown when a listed Machine
// has one: a fleet on a provider without capacity types keeps its table.
func (o *Options) printFleet(fl *fleet, wide, namespaces bool) {
	tw := tabwriter.NewWriter(o.Out, 0, 4, 3, ' ', 0)
	capacity := slices.ContainsFunc(fl.machines, func(m v1alpha1.Machine) bool {
		return m.Labels[driver.CapacityTypeLabel] != ""
	})
	header := "NAME\tPHASE\tREASON\tAGE\tPROVIDER ID"
	if capacity {
		header += "\tCAPACITY"
	}
	header += "\tNODE\tNODE READY\tPODS"
	if namespaces {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tDEPLOYMENT\tSET\tCLASS\tLAST OPERATION"
	}
	fmt.Fprintln(tw, header)
	now := o.Now()
	for i := range fl.machines {
		m := &fl.machines[i]
		node, ready, pods := "-", "-", "-"
		if m.Status.NodeRef != nil {
			node = m.Status.NodeRef.Name
		}
		if n := fl.node(m); n != nil {
			ready, pods = nodeReady(n), strconv.Itoa(fl.pods[n.Name])
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", m.Name, orDash(string(m.Status.Phase)), orDash(machineReason(m)),
			duration.HumanDuration(now.Sub(m.CreationTimestamp.Time)), orDash(m.Spec.ProviderID))
		if capacity {
			row += "\t" + orDash(m.Labels[driver.CapacityTypeLabel])
		}
		row += fmt.Sprintf("\t%s\t%s\t%s", node, ready, pods)
		if namespaces {
			row = m.Namespace + "\t" + row
		}
		if wide {
			class := ""
			if m.Spec.Class != nil {
				class = m.Spec.Class.Name
			} else if r := m.Spec.InfrastructureRef; r != nil {
				class = r.Kind + "/" + r.Name
			}
			op := ""
			if lo := m.Status.LastOperation; lo.Type != "" {
				op = fmt.Sprintf("%s %s", lo.Type, lo.State)
			}
			row += fmt.Sprintf("\t%s\t%s\t%s\t%s", orDash(m.Labels[v1alpha1.MachineDeploymentNameLabel]),
				orDash(m.Labels[v1alpha1.MachineSetNameLabel]), orDash(class), orDash(op))
		}
		fmt.Fprintln(tw, row)
	}
	_ = tw.Flush()
}
