package demo

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/repo"
)

// TestMakeDemoBuildsOnlyWhatItRuns reads what `make demo` would do: it
// builds the binaries a local cluster runs, and kubectl for the commands
// the demo prints, and none of the generators or linters (buf, the protoc
// plugins, controller-gen, staticcheck, the tests' Prometheus) a first-time
// user does not need.
func TestMakeDemoBuildsOnlyWhatItRuns(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-n", "demo")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	var built []string
	for _, line := range strings.Split(string(out), "\n") {
		if _, args, ok := strings.Cut(line, "hack/tools/build.sh"); ok {
			fields := strings.Fields(args)
			if len(fields) == 0 {
				t.Fatalf("make demo builds every tool: %q", line)
			}
			built = append(built, fields...)
		}
	}
	for _, need := range []string{localcluster.Etcd, localcluster.APIServer, localcluster.ControllerManager,
		localcluster.Scheduler, localcluster.Kwok, "kubectl"} {
		if !slices.Contains(built, need) {
			t.Errorf("make demo does not build %s, which the demo runs; it builds %v", need, built)
		}
	}
	for _, extra := range []string{"buf", "protoc-gen-go", "protoc-gen-go-grpc", "controller-gen", "staticcheck", "prometheus"} {
		if slices.Contains(built, extra) {
			t.Errorf("make demo builds %s, which the demo does not run", extra)
		}
	}
}
