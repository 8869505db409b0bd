package vminit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/millwright-dev/millwright/internal/initramfs"
)

// loadModules loads the modules initramfs.LoadOrderPath lists, in its
// order (dependencies first), with finit_module. A module already loaded
// (EEXIST) is fine.
func loadModules(logf func(string, ...any)) error {
	list, err := os.ReadFile(initramfs.LoadOrderPath)
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(list)) {
		rel := strings.TrimSpace(line)
		if rel == "" {
			continue
		}
		if err := loadModule(filepath.Join(initramfs.ModulesDir, rel)); err != nil {
			return fmt.Errorf("loading %s: %w", rel, err)
		}
	}
	logf("kernel modules loaded")
	return nil
}

func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}
