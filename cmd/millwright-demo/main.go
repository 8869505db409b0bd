// Command millwright-demo runs Millwright for real on this machine — a
// local cluster, the simulated cloud (or, with --provider libvirt, real
// VMs; with --provider aws, millwright-aws against a local EC2 API
// server), the manager and a sample MachineDeployment — and shows the
// Machines until they are Running.
// `make demo` builds everything and runs it. With DEMO_EXIT=1 it exits as
// soon as the sample is up (non-zero, with a diagnosis, on timeout).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/millwright-dev/millwright/internal/demo"
	"github.com/millwright-dev/millwright/internal/repo"
)

func main() {
	dir := flag.String("dir", "", "directory for the cluster's files and logs (default: a new temporary directory)")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long the sample may take to come up")
	provider := flag.String("provider", demo.ProviderSim, "the driver: sim (the simulated cloud), libvirt (real QEMU VMs through libvirt; needs root) or aws (millwright-aws against a local moto_server: a real EC2 API, simulated instances)")
	flag.Parse()

	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "millwright-demo: run it from inside the repository:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = demo.Run(ctx, demo.Options{
		Root: root, Dir: *dir, Provider: *provider, Timeout: *timeout, Out: os.Stdout,
		Exit: os.Getenv("DEMO_EXIT") == "1",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "millwright-demo:", err)
		os.Exit(1)
	}
}
