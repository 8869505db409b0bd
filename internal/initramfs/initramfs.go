// Package initramfs builds the initramfs a Millwright VM boots
// (bin/vm/initramfs.img): a gzip'd newc cpio archive holding /init (the
// statically linked millwright-node-agent, which runs as pid 1; see
// internal/vminit) and the kernel modules it needs, with a file listing
// their load order. Nothing else: no shell, no busybox.
package initramfs

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cavaliergopher/cpio"
)

// Where the modules are in the image, and the file listing them in load
// order (one path relative to ModulesDir a line, dependencies first),
// which internal/vminit reads.
const (
	ModulesDir    = "/lib/modules"
	LoadOrderPath = ModulesDir + "/load-order"
)

// AgentModules are the modules the agent needs from a distribution kernel
// that builds them as modules (Debian's cloud kernel does): Build adds
// their dependencies.
var AgentModules = []string{
	"virtio_pci", // the virtio devices QEMU and libvirt attach over PCI
	"virtio_net", // eth0
	"virtio_blk", // the cidata seed disk
	"isofs",      // its ISO9660 filesystem
	"button",     // the ACPI power button, so `virsh shutdown` stops the agent
	"evdev",      // ...read as input events from /dev/input/event*
	"virtio_rng", // entropy from the host, where the VM has a virtio-rng device
}

// Module is a kernel module to load.
type Module struct {
	// Name is the module's name (underscores, as the kernel reports it).
	Name string
	// Path is the .ko file on the build host.
	Path string
}

// Resolve returns the modules names need under modulesRoot (an unpacked
// /lib/modules/<version>), dependencies first, each once. Dependencies are
// read from each module's .modinfo "depends=" (what depmod's modules.dep
// is made from); a module in modulesRoot's modules.builtin is in the
// kernel already and is left out.
func Resolve(modulesRoot string, names []string) ([]Module, error) {
	index := map[string]string{}
	err := filepath.WalkDir(modulesRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ko") {
			index[moduleName(p)] = p
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	builtin := map[string]bool{}
	if data, err := os.ReadFile(filepath.Join(modulesRoot, "modules.builtin")); err == nil {
		for line := range strings.Lines(string(data)) {
			if line = strings.TrimSpace(line); line != "" {
				builtin[moduleName(line)] = true
			}
		}
	}
	var order []Module
	state := map[string]int{} // 1: being visited, 2: done
	var visit func(name string, from []string) error
	visit = func(name string, from []string) error {
		name = strings.ReplaceAll(name, "-", "_")
		switch {
		case state[name] == 2 || builtin[name]:
			return nil
		case state[name] == 1:
			return fmt.Errorf("dependency cycle: %s", strings.Join(append(from, name), " -> "))
		}
		p, ok := index[name]
		if !ok {
			return fmt.Errorf("module %s (needed by %v) is neither in %s nor built in", name, from, modulesRoot)
		}
		state[name] = 1
		deps, err := depends(p)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, append(from, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, Module{Name: name, Path: p})
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// moduleName is the module name of a .ko path: the kernel treats - and _
// alike and reports _.
func moduleName(p string) string {
	return strings.ReplaceAll(strings.TrimSuffix(path.Base(filepath.ToSlash(p)), ".ko"), "-", "_")
}

// depends reads a module's "depends=" from its .modinfo section
// (NUL-separated key=value strings).
func depends(ko string) ([]string, error) {
	f, err := elf.Open(ko)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("%s: no .modinfo section", ko)
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ko, err)
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			if len(v) == 0 {
				return nil, nil
			}
			return strings.Split(string(v), ","), nil
		}
	}
	return nil, nil
}

// Build writes the gzip'd newc cpio archive: the directories the agent
// mounts on, /init (the file at initPath, mode 0755), the modules under
// ModulesDir and LoadOrderPath listing them in order.
func Build(w io.Writer, initPath string, modules []Module) error {
	gz := gzip.NewWriter(w)
	cw := cpio.NewWriter(gz)
	for _, dir := range []string{"dev", "proc", "sys", "run", "tmp", "etc", "lib", "lib/modules"} {
		if err := cw.WriteHeader(&cpio.Header{Name: dir, Mode: cpio.TypeDir | 0o755}); err != nil {
			return err
		}
	}
	if err := addFile(cw, "init", initPath, 0o755); err != nil {
		return err
	}
	var order strings.Builder
	for _, m := range modules {
		rel := m.Name + ".ko"
		if err := addFile(cw, strings.TrimPrefix(path.Join(ModulesDir, rel), "/"), m.Path, 0o644); err != nil {
			return err
		}
		order.WriteString(rel + "\n")
	}
	if err := addBytes(cw, strings.TrimPrefix(LoadOrderPath, "/"), []byte(order.String()), 0o644); err != nil {
		return err
	}
	if err := cw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func addFile(cw *cpio.Writer, name, src string, perm cpio.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return addBytes(cw, name, data, perm)
}

func addBytes(cw *cpio.Writer, name string, data []byte, perm cpio.FileMode) error {
	if err := cw.WriteHeader(&cpio.Header{Name: name, Mode: cpio.TypeReg | perm, Size: int64(len(data)), Links: 1}); err != nil {
		return err
	}
	_, err := cw.Write(data)
	return err
}

// Names lists modules' names, for logs.
func Names(modules []Module) []string {
	names := make([]string, len(modules))
	for i, m := range modules {
		names[i] = m.Name
	}
	return slices.Clip(names)
}
