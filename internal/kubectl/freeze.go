package kubectl

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// newFreezeCommand is freeze (freeze true) or unfreeze: the safety
// controller's overshoot freeze on a MachineDeployment or MachineSet
// (internal/controller/safety). Frozen, neither is scaled up.
//
// freeze sets the frozen label (and drops a person's unfreeze override,
// which would lift it at once). The safety controller lifts a freeze by
// itself once the Machines are back under its limit, so a freeze set by
// hand on a calm fleet lasts until its next check: to stop a rollout for
// good, pause it. unfreeze removes the label and sets the unfreeze
// annotation, the override the safety controller honours until the count
// is back under the limit (it then drops the annotation).
func newFreezeCommand(o *Options, freeze bool) *cobra.Command {
	verb, done := "unfreeze", "unfrozen"
	short := "Lift the overshoot freeze of a MachineDeployment or MachineSet (sets " + v1alpha1.UnfreezeAnnotation + ")"
	if freeze {
		verb, done = "freeze", "frozen"
		short = "Stop scale-ups of a MachineDeployment or MachineSet with the safety controller's frozen label"
	}
	var output string
	cmd := &cobra.Command{
		Use:   verb + " (machinedeployment|machineset)/NAME",
		Short: short,
		Example: fmt.Sprintf(`  kubectl millwright %s machinedeployment/web
  kubectl millwright %s machineset/web-6c8c966bf8`, verb, verb),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, mutationFormats...); err != nil {
				return err
			}
			obj, resource, err := freezeTarget(args[0])
			if err != nil {
				return err
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, obj); err != nil {
				return err
			}
			base := obj.DeepCopyObject().(client.Object)
			labels, annotations := obj.GetLabels(), obj.GetAnnotations()
			if labels == nil {
				labels = map[string]string{}
			}
			if annotations == nil {
				annotations = map[string]string{}
			}
			_, frozen := labels[v1alpha1.FrozenLabel]
			if frozen == freeze {
				state := "not frozen"
				if frozen {
					state = "already frozen"
				}
				return printMutation(o.Out, output, resource, obj, state)
			}
			if freeze {
				labels[v1alpha1.FrozenLabel] = "true"
				delete(annotations, v1alpha1.UnfreezeAnnotation)
			} else {
				delete(labels, v1alpha1.FrozenLabel)
				annotations[v1alpha1.UnfreezeAnnotation] = "true"
			}
			obj.SetLabels(labels)
			obj.SetAnnotations(annotations)
			if err := c.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
				return err
			}
			return printMutation(o.Out, output, resource, obj, done)
		},
	}
	addMutationOutput(cmd, &output)
	return cmd
}

// freezeTarget parses KIND/NAME into an empty object of that kind and
// kubectl's name of the resource.
func freezeTarget(arg string) (client.Object, string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || name == "" {
		return nil, "", fmt.Errorf("%q: name a machinedeployment/NAME or machineset/NAME", arg)
	}
	switch strings.ToLower(kind) {
	case "machinedeployment", "machinedeployments", "mcd":
		md := &v1alpha1.MachineDeployment{}
		md.Name = name
		return md, mdResource, nil
	case "machineset", "machinesets", "ms":
		ms := &v1alpha1.MachineSet{}
		ms.Name = name
		return ms, "machineset.machine.millwright.dev/", nil
	}
	return nil, "", fmt.Errorf("%q: only MachineDeployments and MachineSets are frozen", kind)
}
