package repo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRootIsAboveThisPackage(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "repo", "repo.go")); err != nil {
		t.Fatalf("Root() = %s, which does not hold this package: %v", root, err)
	}
}

func TestRootOutsideTheRepository(t *testing.T) {
	t.Chdir(t.TempDir())
	// The test binary lives in a temporary build directory, outside too.
	if root, err := Root(); err == nil {
		t.Fatalf("Root() = %s outside any Millwright checkout; want an error", root)
	}
}
