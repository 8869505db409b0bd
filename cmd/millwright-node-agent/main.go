// Command millwright-node-agent joins a machine to a cluster as a Node
// the way a kubelet does (TLS bootstrap with the bootstrap token in the
// TokenBootstrapConfig provider's user data), keeps the Node's Lease and
// status up, and runs no containers:
//
//	millwright-node-agent --user-data FILE --meta-data FILE [--cert-dir DIR] [--state DEVICE]
//	millwright-node-agent --cloud-init [--cert-dir DIR] [--state DEVICE]
//
// With --cloud-init it is a service of an image that has cloud-init
// (hack/tools/cloudimage.sh builds one): it reads the files cloud-init
// wrote from the user data and cloud-init's instance data instead of the
// seed.
// It also carries out in-place updates of the Kubernetes version by
// rebooting the machine (docs/in-place-updates.md). As pid 1 (the /init
// of bin/vm/initramfs.img) it first prepares the VM (internal/vminit),
// finds the user data on the cloud-init NoCloud seed and the state device
// by its serial. See docs/providers/node-agent.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/millwright-dev/millwright/internal/nodeagent"
	"github.com/millwright-dev/millwright/internal/vminit"
)

func main() {
	if os.Getpid() == 1 {
		vminit.Main(func(seedDir string) []string {
			args := []string{
				"--user-data=" + filepath.Join(seedDir, "user-data"),
				"--meta-data=" + filepath.Join(seedDir, "meta-data"),
				"--cert-dir=/run/millwright-node-agent",
			}
			// The provider's state volume, if it gave one (the libvirt
			// driver does): what survives a reboot.
			if dev := nodeagent.FindStateDevice("/sys/block"); dev != "" {
				args = append(args, "--state="+dev)
			} else {
				vminit.Logf("no disk with serial %s: nothing survives a reboot, in-place updates are refused", nodeagent.StateSerial)
			}
			return args
		})
		return
	}
	if err := run(os.Args[1:]); err != nil {
		vminit.Logf("%v", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("millwright-node-agent", flag.ContinueOnError)
	userData := fs.String("user-data", "", "the cloud-init user data the TokenBootstrapConfig provider rendered (required)")
	metaData := fs.String("meta-data", "", "the cloud-init NoCloud meta-data: instance-id, local-hostname, provider-id (required)")
	cloudInit := fs.Bool("cloud-init", false, "a service in an image with cloud-init: read "+nodeagent.BootstrapKubeconfigPath+" and "+nodeagent.VersionPath+" as cloud-init wrote them, and the meta-data from "+nodeagent.InstanceDataPath+" (instead of --user-data and --meta-data)")
	var opts nodeagent.Options
	fs.StringVar(&opts.CertDir, "cert-dir", "/run/millwright-node-agent", "where the node's key, certificate and kubeconfig are written (a tmpfs in the VM)")
	fs.StringVar(&opts.StatePath, "state", "", "the state device (or file) keeping the node's credentials and version across reboots; empty: none (a reboot bootstraps again, in-place updates are refused)")
	fs.IntVar(&opts.MaxPods, "max-pods", 0, "the Node's pods capacity (the agent runs no containers)")
	fs.DurationVar(&opts.LeaseDuration, "node-lease-duration", 0, "the Node Lease's duration, renewed every quarter of it (default: the kubelet's 40s)")
	rotate := fs.Bool("rotate-certificates", true, "renew the node's client certificate after 70-90% of its lifetime through a CSR made with it, as the kubelet's --rotate-certificates")
	fs.DurationVar(&opts.StatusReportFrequency, "node-status-report-frequency", 0, "how often the Node's status is posted unchanged (default: the kubelet's 5m)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	opts.NoCertificateRotation = !*rotate
	var cfg nodeagent.JoinConfig
	var err error
	switch {
	case *cloudInit && (*userData != "" || *metaData != ""):
		return errors.New("--cloud-init excludes --user-data and --meta-data")
	case *cloudInit:
		cfg, err = readCloudInit()
	case *userData == "" || *metaData == "":
		return errors.New("--user-data and --meta-data are required (or --cloud-init)")
	default:
		cfg, err = readSeed(*userData, *metaData)
	}
	if err != nil {
		return err
	}
	opts.Logf = vminit.Logf
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	vminit.Logf("joining %s as Node %s (providerID %s, instance-id %s, state %q)", cfg.Server, cfg.NodeName, cfg.ProviderID, cfg.InstanceID, opts.StatePath)
	return nodeagent.Run(ctx, cfg, opts)
}

// readSeed reads the NoCloud seed's files.
func readSeed(userData, metaData string) (nodeagent.JoinConfig, error) {
	ud, err := os.ReadFile(userData)
	if err != nil {
		return nodeagent.JoinConfig{}, err
	}
	md, err := os.ReadFile(metaData)
	if err != nil {
		return nodeagent.JoinConfig{}, err
	}
	cfg, err := nodeagent.ParseSeed(ud, md)
	if err != nil {
		return nodeagent.JoinConfig{}, fmt.Errorf("reading the seed: %w", err)
	}
	return cfg, nil
}

// readCloudInit reads what cloud-init wrote: the user data's files and its
// instance data. The version file is optional (a Machine without
// spec.version has none).
func readCloudInit() (nodeagent.JoinConfig, error) {
	kc, err := os.ReadFile(nodeagent.BootstrapKubeconfigPath)
	if err != nil {
		return nodeagent.JoinConfig{}, err
	}
	version, err := os.ReadFile(nodeagent.VersionPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nodeagent.JoinConfig{}, err
	}
	id, err := os.ReadFile(nodeagent.InstanceDataPath)
	if err != nil {
		return nodeagent.JoinConfig{}, err
	}
	return nodeagent.ParseCloudInit(kc, version, id)
}
