// Command millwright-localcluster runs a local Kubernetes control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
// from bin/) until interrupted:
//
//	millwright-localcluster up [--dir D] [--kubeconfig PATH] [--bin-dir B] [--apiserver-extra-ip IP] [--apiserver-bind-address 0.0.0.0]
//
// It prints the kubeconfig to use, runs until Ctrl-C or SIGTERM, then stops
// every component. Nodes annotated kwok.x-k8s.io/node=fake are kept Ready
// by kwok; see package internal/localcluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/millwright-dev/millwright/internal/localcluster"
)

const usage = `Usage: millwright-localcluster up [flags]

Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
from bin/ on free 127.0.0.1 ports, prints the kubeconfig to use, and runs until
Ctrl-C or SIGTERM, then stops them all.

Flags:
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "millwright-localcluster:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "up" {
		fmt.Fprint(stderr, usage)
		newFlags(stderr, &localcluster.Options{}).PrintDefaults()
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return nil
		}
		return errors.New(`expected the command "up"`)
	}
	var opts localcluster.Options
	fs := newFlags(stderr, &opts)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	opts.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }

	// The first Ctrl-C or SIGTERM aborts the start or ends the run; Stop
	// then runs with the signals still caught, so a second Ctrl-C cannot
	// kill this process half-way and orphan the components (they are in
	// process groups of their own and do not get the terminal's SIGINT).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	begin := time.Now()
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, `Local cluster up in %s.
  API server:  %s
  kubeconfig:  %s
  logs:        %s

Use it with:
  export KUBECONFIG=%s
  kubectl get nodes

Nodes annotated kwok.x-k8s.io/node=fake are played by kwok; label one
%s=true to make it NotReady.
Press Ctrl-C to stop.
`, time.Since(begin).Round(100*time.Millisecond), c.APIServerURL(), c.Kubeconfig(), c.LogPath("<component>"),
		c.Kubeconfig(), localcluster.KwokNotReadyLabel)

	<-ctx.Done()
	fmt.Fprintln(stderr, "\nstopping the local cluster...")
	if err := c.Stop(); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	fmt.Fprintln(stderr, "stopped.")
	return nil
}

func newFlags(out io.Writer, opts *localcluster.Options) *flag.FlagSet {
	fs := flag.NewFlagSet("millwright-localcluster up", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&opts.Dir, "dir", "", "working directory for certificates, data, kubeconfigs and logs (default: a temporary directory, removed on exit)")
	fs.StringVar(&opts.KubeconfigPath, "kubeconfig", "", "where to write the administrator's kubeconfig (default: <dir>/kubeconfig)")
	fs.Func("apiserver-extra-ip", "an IP address to add to the API server's serving certificate, e.g. 10.0.2.100 for VMs reaching it through QEMU's guestfwd (repeatable)", func(v string) error {
		ip := net.ParseIP(v)
		if ip == nil {
			return fmt.Errorf("not an IP address: %q", v)
		}
		opts.APIServerExtraIPs = append(opts.APIServerExtraIPs, ip)
		return nil
	})
	fs.StringVar(&opts.APIServerBindAddress, "apiserver-bind-address", "127.0.0.1", "where the API server listens: 127.0.0.1, or 0.0.0.0 for VMs on a libvirt network (with --apiserver-extra-ip set to the host's address there)")
	fs.StringVar(&opts.BinDir, "bin-dir", "", "directory holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (default: <repository root>/bin)")
	return fs
}
