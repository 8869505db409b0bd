// Command millwright-initramfs builds the initramfs of a Millwright VM
// (hack/tools/vm.sh runs it for `make tools`):
//
//	millwright-initramfs --init AGENT --modules-root DIR --out FILE
//
// AGENT is a statically linked millwright-node-agent; DIR is an unpacked
// /lib/modules/<version> of the kernel the VM boots. See package
// internal/initramfs.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/millwright-dev/millwright/internal/initramfs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "millwright-initramfs:", err)
		os.Exit(1)
	}
}

func run() error {
	initPath := flag.String("init", "", "the statically linked millwright-node-agent to install as /init (required)")
	modulesRoot := flag.String("modules-root", "", "the kernel's unpacked /lib/modules/<version> (required)")
	out := flag.String("out", "", "the initramfs to write (required)")
	modules := flag.String("modules", strings.Join(initramfs.AgentModules, ","), "the modules to include, dependencies added")
	flag.Parse()
	if *initPath == "" || *modulesRoot == "" || *out == "" {
		flag.Usage()
		return fmt.Errorf("--init, --modules-root and --out are required")
	}
	mods, err := initramfs.Resolve(*modulesRoot, strings.Split(*modules, ","))
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".initramfs-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := initramfs.Build(tmp, *initPath, mods); err != nil {
		_ = tmp.Close()
		return err
	}
	// Readable by whoever runs the VM (libvirt's qemu user).
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	fmt.Printf("%s: /init and modules %s\n", *out, strings.Join(initramfs.Names(mods), " "))
	return nil
}
