package kubectl

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Options is what every verb shares: where to connect, where to write,
// and the clock (tests fix it to get stable ages in golden tables).
type Options struct {
	// ConfigFlags are kubectl's connection flags (--kubeconfig, --context,
	// -n, --as, ...).
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	// Now is the clock ages and durations are measured against.
	Now func() time.Time
}

// NewCommand returns the root command. name is the program's name as run
// (os.Args[0]): as kubectl-millwright, kubectl runs it as the plugin
// "kubectl millwright", and the help says so; under another name (such
// as millwright) it is that command.
func NewCommand(name string, o *Options) *cobra.Command {
	if o.ConfigFlags == nil {
		o.ConfigFlags = genericclioptions.NewConfigFlags(true)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	// The command is named after the program, so that its completion
	// script completes that program (a script for "kubectl" would replace
	// kubectl's own); the help shows the name it is typed with.
	use := filepath.Base(name)
	display := use
	if plugin, ok := strings.CutPrefix(use, "kubectl-"); ok {
		display = "kubectl " + plugin
	}
	root := &cobra.Command{
		Use:   use,
		Short: "Operate Millwright: the fleet, a Machine's timeline, rollouts, freezes and drains",
		Long: `Operate Millwright's Machines, MachineSets and MachineDeployments from the
command line, through the same kubeconfig and flags as kubectl.
See docs/kubectl-plugin.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: display},
	}
	root.SetIn(o.In)
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	root.AddCommand(newGetCommand(o), newDescribeCommand(o), newRolloutCommand(o),
		newFreezeCommand(o, true), newFreezeCommand(o, false), newDrainCommand(o),
		newPreserveCommand(o, true), newPreserveCommand(o, false))
	return root
}
