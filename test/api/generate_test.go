package api_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreCurrent regenerates deepcopy code, CRDs, the RBAC
// roles (and the Helm chart's copies of both) and the driver protocol's Go
// code, the flags and metrics references and the Grafana dashboard into a
// temporary directory and fails when the committed files
// differ: someone changed the API, an RBAC marker or driver.proto without
// running `make generate`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(env.Root, "hack", "generate.sh"), out)
	cmd.Dir = env.Root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/generate.sh: %v\n%s", err, b)
	}
	compare := func(generatedDir, committedDir string) {
		generated, err := os.ReadDir(generatedDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(generated) == 0 {
			t.Fatalf("nothing was generated into %s", generatedDir)
		}
		for _, f := range generated {
			want, err := os.ReadFile(filepath.Join(generatedDir, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(committedDir, f.Name()))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s is stale or missing: run `make generate`", filepath.Join(committedDir, f.Name()))
			}
		}
	}
	compare(filepath.Join(out, "object"), filepath.Join(env.Root, "api", "v1alpha1"))
	compare(filepath.Join(out, "object-infrastructure"), filepath.Join(env.Root, "api", "infrastructure", "v1alpha1"))
	compare(filepath.Join(out, "object-bootstrap"), filepath.Join(env.Root, "api", "bootstrap", "v1alpha1"))
	compare(filepath.Join(out, "crd"), filepath.Join(env.Root, "config", "crd", "bases"))
	compare(filepath.Join(out, "rbac"), filepath.Join(env.Root, "config", "rbac"))
	compare(filepath.Join(out, "chart", "crds"), filepath.Join(env.Root, "charts", "millwright", "crds"))
	compare(filepath.Join(out, "chart", "templates"), filepath.Join(env.Root, "charts", "millwright", "templates"))
	compare(filepath.Join(out, "proto", "v1"), filepath.Join(env.Root, "api", "driver", "v1"))
	compare(filepath.Join(out, "flags"), filepath.Join(env.Root, "docs", "flags"))
	compare(filepath.Join(out, "metrics"), filepath.Join(env.Root, "docs"))
	compare(filepath.Join(out, "grafana"), filepath.Join(env.Root, "config", "grafana"))
	compare(filepath.Join(out, "chart", "dashboards"), filepath.Join(env.Root, "charts", "millwright", "dashboards"))
}
