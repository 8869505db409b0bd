// Command millwright-sim runs the simulated cloud as a driver plugin; see
// internal/simserver and `millwright-sim --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/simserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := simserver.NewCommand(os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "millwright-sim:", err)
	}
	os.Exit(cli.ExitCode(err))
}
