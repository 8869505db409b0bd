package kubectl

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newRolloutPauseCommand is pause (pause true) or resume: spec.paused.
func newRolloutPauseCommand(o *Options, pause bool) *cobra.Command {
	verb, done, short := "resume", "resumed", "Resume a paused MachineDeployment: its rollout and its Machines' reconciliation go on"
	if pause {
		verb, done, short = "pause", "paused", "Pause a MachineDeployment: no rollout, and its Machines are not reconciled, until resumed"
	}
	var output string
	cmd := &cobra.Command{
		Use:     verb + " NAME",
		Short:   short,
		Example: "  kubectl millwright rollout " + verb + " web",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, mutationFormats...); err != nil {
				return err
			}
			ctx := cmd.Context()
			c, md, err := o.getMD(ctx, args[0])
			if err != nil {
				return err
			}
			if md.Spec.Paused == pause {
				return fmt.Errorf("%s%s is already %s", mdResource, md.Name, done)
			}
			base := md.DeepCopy()
			md.Spec.Paused = pause
			if err := c.Patch(ctx, md, client.MergeFrom(base)); err != nil {
				return err
			}
			return printMutation(o.Out, output, mdResource, md, done)
		},
	}
	o.mdArgs(cmd)
	addMutationOutput(cmd, &output)
	return cmd
}
