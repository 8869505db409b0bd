package kubectl

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// addOutputFlag adds kubectl's -o flag with the formats given ("" is the
// table) and completion for them.
func addOutputFlag(cmd *cobra.Command, output *string, formats ...string) {
	cmd.Flags().StringVarP(output, "output", "o", "", fmt.Sprintf("Output format: one of %v.", formats))
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return formats, cobra.ShellCompDirectiveNoFileComp
	})
}

// checkOutput refuses a format the verb does not have, as kubectl does.
func checkOutput(output string, formats ...string) error {
	if output == "" {
		return nil
	}
	for _, f := range formats {
		if f == output {
			return nil
		}
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %v", output, formats)
}

// printObject writes obj as JSON or YAML with its apiVersion and kind
// filled in (a typed client leaves them empty), items of a list too.
func printObject(out io.Writer, format string, obj runtime.Object) error {
	if err := setKind(obj); err != nil {
		return err
	}
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		for _, item := range items {
			if err := setKind(item); err != nil {
				return err
			}
		}
	}
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	if format == "yaml" {
		p = &printers.YAMLPrinter{}
	}
	return p.PrintObj(obj, out)
}

func setKind(obj runtime.Object) error {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// mutationFormats are the -o formats of the verbs that change an object,
// as kubectl's rollout pause and restart have them.
var mutationFormats = []string{"json", "yaml", "name"}

// addMutationOutput adds -o to a verb that changes an object; the verb
// calls checkOutput(output, mutationFormats...) before it reads anything.
func addMutationOutput(cmd *cobra.Command, output *string) {
	addOutputFlag(cmd, output, mutationFormats...)
}

// printMutation reports what a verb did to obj: "resource/name done"
// (kubectl's default), "resource/name" (-o name), or the object as the
// API server returned it (-o json|yaml).
func printMutation(out io.Writer, output, resource string, obj client.Object, done string) error {
	switch output {
	case "":
		_, err := fmt.Fprintf(out, "%s%s %s\n", resource, obj.GetName(), done)
		return err
	case "name":
		_, err := fmt.Fprintf(out, "%s%s\n", resource, obj.GetName())
		return err
	}
	return printObject(out, output, obj)
}
