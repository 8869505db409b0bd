// Command millwright-manager runs Millwright's controllers; see
// internal/manager and `millwright-manager --help`.
package main

import (
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/manager"
)

func main() {
	err := manager.NewCommand().ExecuteContext(ctrl.SetupSignalHandler())
	if err != nil {
		fmt.Fprintln(os.Stderr, "millwright-manager:", err)
	}
	os.Exit(cli.ExitCode(err))
}
