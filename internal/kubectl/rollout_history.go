package kubectl

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// changeCauseAnnotation is kubectl's record of the command that made a
// revision; a MachineSet carries it when its deployment's template did.
const changeCauseAnnotation = "kubernetes.io/change-cause"

func newRolloutHistoryCommand(o *Options) *cobra.Command {
	var revision int64
	var output string
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List a MachineDeployment's revisions (from its MachineSets' revision annotations), or show one",
		Example: `  kubectl millwright rollout history web
  kubectl millwright rollout history web --revision 2 -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "json", "yaml"); err != nil {
				return err
			}
			c, md, err := o.getMD(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			sets, err := ownedSets(cmd.Context(), c, md)
			if err != nil {
				return err
			}
			if revision > 0 {
				for i := range sets {
					if revisionOf(&sets[i]) != revision {
						continue
					}
					if output != "" {
						return printObject(o.Out, output, &sets[i])
					}
					return o.printRevision(md, &sets[i])
				}
				return fmt.Errorf("unable to find the specified revision %d", revision)
			}
			if output != "" {
				return printObject(o.Out, output, &v1alpha1.MachineSetList{Items: sets})
			}
			fmt.Fprintf(o.Out, "%s%s\n", mdResource, md.Name)
			tw := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tMACHINESET\tCLASS\tMACHINES\tCHANGE-CAUSE")
			for i := range sets {
				ms := &sets[i]
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", revisionOf(ms), ms.Name, orDash(templateClass(&ms.Spec.Template)),
					ms.Status.Replicas, orDash(ms.Annotations[changeCauseAnnotation]))
			}
			return tw.Flush()
		},
	}
	o.mdArgs(cmd)
	cmd.Flags().Int64Var(&revision, "revision", 0, "Show the template of this revision.")
	addOutputFlag(cmd, &output, "json", "yaml")
	return cmd
}

// printRevision shows one revision's Machine template, as kubectl shows a
// revision's pod template.
func (o *Options) printRevision(md *v1alpha1.MachineDeployment, ms *v1alpha1.MachineSet) error {
	t := &ms.Spec.Template
	fmt.Fprintf(o.Out, "%s%s with revision #%d\n", mdResource, md.Name, revisionOf(ms))
	fmt.Fprintf(o.Out, "MachineSet:   %s\n", ms.Name)
	fmt.Fprintf(o.Out, "Labels:       %s\n", keyValues(t.Metadata.Labels))
	fmt.Fprintf(o.Out, "Annotations:  %s\n", keyValues(t.Metadata.Annotations))
	fmt.Fprintf(o.Out, "Class:        %s\n", orDash(templateClass(t)))
	if t.Spec.FailureDomain != "" {
		fmt.Fprintf(o.Out, "Failure domain: %s\n", t.Spec.FailureDomain)
	}
	if cause := ms.Annotations[changeCauseAnnotation]; cause != "" {
		fmt.Fprintf(o.Out, "Change cause: %s\n", cause)
	}
	return nil
}

// templateClass names what a template's Machines are made of: the
// MachineClass, or the InfraMachine template kind and name.
func templateClass(t *v1alpha1.MachineTemplateSpec) string {
	if t.Spec.Class != nil {
		return t.Spec.Class.Name
	}
	if r := t.Spec.InfrastructureRef; r != nil {
		return r.Kind + "/" + r.Name
	}
	return ""
}

// keyValues is a map as sorted k=v pairs, or <none> as kubectl describe shows it.
func keyValues(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	pairs := make([]string, 0, len(m))
	for k, v := range m {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ", ")
}
