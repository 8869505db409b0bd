package kubectl

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// mdResource is how kubectl names a MachineDeployment in its messages.
const mdResource = "machinedeployment.machine.millwright.dev/"

func newRolloutCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Manage the rollout of a MachineDeployment, as kubectl rollout does a Deployment's",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newRolloutStatusCommand(o), newRolloutHistoryCommand(o), newRolloutUndoCommand(o),
		newRolloutPauseCommand(o, true), newRolloutPauseCommand(o, false), newRolloutRestartCommand(o))
	return cmd
}

// mdArgs accepts NAME or machinedeployment/NAME (kubectl's TYPE/NAME form)
// and completes MachineDeployment names.
func (o *Options) mdArgs(cmd *cobra.Command) {
	cmd.Args = cobra.ExactArgs(1)
	cmd.ValidArgsFunction = o.completeArg(&v1alpha1.MachineDeploymentList{})
}

func mdName(arg string) (string, error) {
	for _, prefix := range []string{"machinedeployment/", "machinedeployments/", "mcd/", "machinedeployment.machine.millwright.dev/"} {
		if len(arg) > len(prefix) && arg[:len(prefix)] == prefix {
			return arg[len(prefix):], nil
		}
	}
	for i := range arg {
		if arg[i] == '/' {
			return "", fmt.Errorf("%q: rollout works on MachineDeployments only", arg)
		}
	}
	return arg, nil
}

// getMachine reads the Machine named name in the command's namespace.
func (o *Options) getMachine(ctx context.Context, name string) (client.WithWatch, *v1alpha1.Machine, error) {
	c, ns, err := o.client()
	if err != nil {
		return nil, nil, err
	}
	m := &v1alpha1.Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		return nil, nil, err
	}
	return c, m, nil
}

// getMD reads the MachineDeployment an argument names.
func (o *Options) getMD(ctx context.Context, arg string) (client.WithWatch, *v1alpha1.MachineDeployment, error) {
	name, err := mdName(arg)
	if err != nil {
		return nil, nil, err
	}
	c, ns, err := o.client()
	if err != nil {
		return nil, nil, err
	}
	md := &v1alpha1.MachineDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, md); err != nil {
		return nil, nil, err
	}
	return c, md, nil
}

// ownedSets lists the MachineSets md controls, lowest revision first.
func ownedSets(ctx context.Context, c client.Client, md *v1alpha1.MachineDeployment) ([]v1alpha1.MachineSet, error) {
	list := &v1alpha1.MachineSetList{}
	if err := c.List(ctx, list, client.InNamespace(md.Namespace)); err != nil {
		return nil, err
	}
	var sets []v1alpha1.MachineSet
	for _, ms := range list.Items {
		if ref := metav1.GetControllerOf(&ms); ref != nil && ref.UID == md.UID {
			sets = append(sets, ms)
		}
	}
	sort.Slice(sets, func(i, j int) bool { return revisionOf(&sets[i]) < revisionOf(&sets[j]) })
	return sets, nil
}

func revisionOf(ms *v1alpha1.MachineSet) int64 {
	n, _ := strconv.ParseInt(ms.Annotations[v1alpha1.RevisionAnnotation], 10, 64)
	return n
}
