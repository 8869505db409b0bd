package kubectl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func newRolloutUndoCommand(o *Options) *cobra.Command {
	var to int64
	var output string
	cmd := &cobra.Command{
		Use:   "undo NAME",
		Short: "Roll back to the previous revision, or to --to-revision, through spec.rollbackTo",
		Example: `  kubectl millwright rollout undo web
  kubectl millwright rollout undo web --to-revision 2`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, mutationFormats...); err != nil {
				return err
			}
			ctx := cmd.Context()
			var md *v1alpha1.MachineDeployment
			// The check and the write are made again when the deployment
			// changed in between: its controller writes its status often,
			// and the write is locked on the version the check read.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				c, got, err := o.getMD(ctx, args[0])
				if err != nil {
					return err
				}
				md = got
				return rollBack(ctx, c, md, to)
			})
			if err != nil {
				return err
			}
			return printMutation(o.Out, output, mdResource, md, "rolled back")
		},
	}
	o.mdArgs(cmd)
	addMutationOutput(cmd, &output)
	cmd.Flags().Int64Var(&to, "to-revision", 0, "The revision to roll back to; 0 is the one before the current.")
	return cmd
}

// rollBack asks md's controller to roll back to revision to (0: the one
// before the current), refusing at once what the controller would only
// report in an Event: a revision that is not there, or nothing to go back
// to. The write is locked on the version read.
func rollBack(ctx context.Context, c client.Client, md *v1alpha1.MachineDeployment, to int64) error {
	sets, err := ownedSets(ctx, c, md)
	if err != nil {
		return err
	}
	found := false
	for i := range sets {
		found = found || (to != 0 && revisionOf(&sets[i]) == to)
	}
	switch {
	case to != 0 && !found:
		return fmt.Errorf("unable to find the specified revision %d", to)
	case to == 0 && len(sets) < 2:
		return fmt.Errorf("no rollout history found for machinedeployment %q", md.Name)
	}
	base := md.DeepCopy()
	md.Spec.RollbackTo = &v1alpha1.RollbackConfig{Revision: to}
	return c.Patch(ctx, md, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}
