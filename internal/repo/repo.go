// Package repo finds the Millwright repository on disk, for the programs
// and tests that run the binaries and read the manifests it holds.
package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// modulePath is Millwright's Go module path, as its go.mod declares it.
const modulePath = "github.com/millwright-dev/millwright"

// Root returns the repository root: the nearest directory upwards from the
// working directory, then from the running executable, whose go.mod is
// Millwright's.
func Root() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err == nil && strings.HasPrefix(string(data), "module "+modulePath+"\n") {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("the Millwright repository root (its go.mod) is not above the working directory or the executable")
}
