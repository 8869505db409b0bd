package kubectl

import (
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// machineResource prefixes a Machine's name in messages, as kubectl does.
const machineResource = "machine.machine.millwright.dev/"

// newPreserveCommand is preserve (on true) or unpreserve: the preserve
// annotation on a Machine (docs/preservation.md). preserve asks for "now"
// or, with --when-failed, "when-failed"; unpreserve removes the
// annotation, which ends a preservation: a failed Machine is then
// drained and replaced, a healthy one released.
func newPreserveCommand(o *Options, on bool) *cobra.Command {
	var whenFailed bool
	var output string
	verb, short := "unpreserve", "End a Machine's preservation (removes "+v1alpha1.PreserveAnnotation+")"
	example := "  kubectl millwright unpreserve web-6c8c966bf8-mppr6"
	if on {
		verb, short = "preserve", "Keep a Machine, its VM and its Node for debugging (sets "+v1alpha1.PreserveAnnotation+")"
		example = "  kubectl millwright preserve web-6c8c966bf8-mppr6\n  kubectl millwright preserve web-6c8c966bf8-mppr6 --when-failed"
	}
	cmd := &cobra.Command{
		Use:     verb + " MACHINE",
		Short:   short,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, mutationFormats...); err != nil {
				return err
			}
			ctx := cmd.Context()
			c, m, err := o.getMachine(ctx, args[0])
			if err != nil {
				return err
			}
			want := ""
			if on {
				want = v1alpha1.PreserveNow
				if whenFailed {
					want = v1alpha1.PreserveWhenFailed
				}
			}
			have, set := m.Annotations[v1alpha1.PreserveAnnotation]
			if (on && have == want) || (!on && !set) {
				return printMutation(o.Out, output, machineResource, m, "unchanged")
			}
			base := m.DeepCopy()
			if on {
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[v1alpha1.PreserveAnnotation] = want
			} else {
				delete(m.Annotations, v1alpha1.PreserveAnnotation)
			}
			if err := c.Patch(ctx, m, client.MergeFrom(base)); err != nil {
				return err
			}
			done := "unpreserved"
			if on {
				done = "preserved (" + want + ")"
			}
			return printMutation(o.Out, output, machineResource, m, done)
		},
	}
	addMutationOutput(cmd, &output)
	if on {
		cmd.Flags().BoolVar(&whenFailed, "when-failed", false, "keep the Machine only if it fails (default: keep it now, Running or not)")
	}
	return cmd
}
