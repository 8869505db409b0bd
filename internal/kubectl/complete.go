package kubectl

import (
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// completeNames completes the names of the objects of list's kind in the
// namespace the flags name: the shell completion of object arguments and
// flags. A failure completes nothing, as kubectl's does.
func (o *Options) completeNames(list client.ObjectList) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		c, ns, err := o.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(cmd.Context(), l, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		_ = meta.EachListItem(l, func(obj runtime.Object) error {
			if a, err := meta.Accessor(obj); err == nil {
				names = append(names, a.GetName())
			}
			return nil
		})
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeArg completes the first argument only, with completeNames.
func (o *Options) completeArg(list client.ObjectList) cobra.CompletionFunc {
	names := o.completeNames(list)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(cmd, args, toComplete)
	}
}
