package kubectl

import (
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newRolloutRestartCommand replaces every Machine of a MachineDeployment
// by setting spec.rolloutAfter to now: kubectl restarts a Deployment with
// an annotation in its pod template, but a MachineDeployment's template
// annotations change its Machines in place (docs/kubectl-plugin.md).
func newRolloutRestartCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "restart NAME",
		Short: "Replace every Machine of a MachineDeployment through a rollout (sets spec.rolloutAfter to now)",
		Example: "  kubectl millwright rollout restart web\n" +
			"  kubectl millwright rollout status web",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, mutationFormats...); err != nil {
				return err
			}
			ctx := cmd.Context()
			c, md, err := o.getMD(ctx, args[0])
			if err != nil {
				return err
			}
			if md.Spec.Paused {
				// As kubectl: a paused deployment would keep the request
				// without acting on it.
				return fmt.Errorf("can't restart paused %s%s (run rollout resume first)", mdResource, md.Name)
			}
			base := md.DeepCopy()
			md.Spec.RolloutAfter = &metav1.Time{Time: o.Now()}
			if err := c.Patch(ctx, md, client.MergeFrom(base)); err != nil {
				return err
			}
			return printMutation(o.Out, output, mdResource, md, "restarted")
		},
	}
	o.mdArgs(cmd)
	addMutationOutput(cmd, &output)
	return cmd
}
