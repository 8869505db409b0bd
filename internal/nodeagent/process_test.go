package nodeagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/millwright-dev/millwright/internal/repo"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// TestAgentProcess runs the millwright-node-agent command (not as pid 1)
// with a seed's files: it joins, keeps its credentials in --cert-dir only
// readable by itself, and on SIGTERM marks its Node NotReady and exits.
func TestAgentProcess(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	const node = "vm-process"
	ud, md, _ := seed(t, cs, node, "millwright-libvirt://default/"+node)
	dir := t.TempDir()
	for name, data := range map[string][]byte{"user-data": ud, "meta-data": md} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "millwright-node-agent")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/millwright-node-agent")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	certDir := filepath.Join(dir, "certs")
	if err := cluster.StartProcess(ctx, node, bin, "--user-data="+filepath.Join(dir, "user-data"),
		"--meta-data="+filepath.Join(dir, "meta-data"), "--cert-dir="+certDir, "--node-lease-duration=4s"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the Node to be Ready", func() (bool, error) {
		if exited, err := cluster.ProcessExited(node); exited {
			out, _ := os.ReadFile(cluster.LogPath(node))
			t.Fatalf("the agent exited: %v\n%s", err, out)
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && testenv.NodeReady(n), nil
	})
	for _, f := range []string{keyFile, certFile, kubeconfigFile} {
		fi, err := os.Stat(filepath.Join(certDir, f))
		if err != nil {
			t.Error(err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, fi.Mode())
		}
	}

	if err := cluster.StopProcess(node); err != nil {
		t.Fatal(err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkStopped(t, n, "after SIGTERM")
	if out, _ := os.ReadFile(cluster.LogPath(node)); !strings.Contains(string(out), "millwright-node-agent: stopped") {
		t.Errorf("the agent's log does not say it stopped:\n%s", out)
	}
}
