package aws

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManagerHasNoAWSDependency checks that the manager's binary imports
// no AWS package: the SDK belongs to millwright-aws alone, and a manager
// that pulled it in would carry it (and its size and CVEs) for every
// provider.
func TestManagerHasNoAWSDependency(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./cmd/millwright-manager")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/millwright-manager: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 100 {
		t.Fatalf("go list found only %d packages in the manager: the check would prove nothing", len(pkgs))
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p, "github.com/aws/") || strings.HasPrefix(p, "github.com/millwright-dev/millwright/internal/provider/aws") {
			t.Errorf("the manager imports %s", p)
		}
	}
}
