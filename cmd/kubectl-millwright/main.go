// Command kubectl-millwright operates Millwright from the command line: as
// a kubectl plugin (kubectl millwright ...) or on its own under any name
// (millwright ...). See docs/kubectl-plugin.md.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/kubectl"
)

func main() {
	o := &kubectl.Options{IOStreams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}}
	// kubectl's own prefix, as a plugin's errors read like kubectl's.
	cli.Main("error", kubectl.NewCommand(os.Args[0], o))
}
