package kubectl

import (
	"fmt"

	"github.com/spf13/cobra"
)

// errRestart says why restart cannot be done: kubectl restarts a
// Deployment by writing a restartedAt annotation into its pod template,
// but a MachineDeployment's template labels and annotations are pushed to
// the existing Machines in place (docs/kubectl-plugin.md, "rollout
// restart"); every field that does replace Machines (class,
// infrastructureRef, bootstrap, failureDomain, clusterName) means
// something else. A restart needs a field of its own in the API.
var errRestart = fmt.Errorf("rollout restart is not possible yet: a MachineDeployment's template annotations change its Machines in place, " +
	"so there is no field whose change replaces every Machine without changing what they are; " +
	"see docs/kubectl-plugin.md (replace Machines one by one with `kubectl delete machine`, or roll to a copy of the MachineClass)")

func newRolloutRestartCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restart NAME",
		Short: "Not possible yet: replacing every Machine needs an API field (see docs/kubectl-plugin.md)",
		RunE: func(*cobra.Command, []string) error {
			return errRestart
		},
	}
	o.mdArgs(cmd)
	return cmd
}
