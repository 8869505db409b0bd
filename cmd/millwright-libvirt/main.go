// Command millwright-libvirt runs the libvirt driver plugin; see
// internal/libvirtserver and `millwright-libvirt --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/libvirtserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := libvirtserver.NewCommand(os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "millwright-libvirt:", err)
	}
	os.Exit(cli.ExitCode(err))
}
