// Package deploy_test checks what deploys Millwright into a cluster: the
// kustomize bases under config/ render and are accepted by a real
// kube-apiserver (server-side dry run, Pod Security "restricted" included),
// the generated RBAC grants exactly what the controllers use, and the
// manager and the sim, run with the Deployment's own flags under the
// ServiceAccount's token, bring a Machine up and take it down with nothing
// forbidden.
package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/millwright-dev/millwright/internal/testenv"
)

var (
	env *testenv.Env
	// adminKubeconfig is an administrator kubeconfig for kubectl.
	adminKubeconfig string
	// kubectl is bin/kubectl, which has kustomize built in.
	kubectl string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control plane:", err)
		}
	}()
	dir, err := os.MkdirTemp("", "millwright-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if adminKubeconfig, err = env.WriteKubeconfig(dir); err != nil {
		fmt.Fprintln(os.Stderr, "writing kubeconfig:", err)
		return 1
	}
	kubectl = filepath.Join(env.Root, "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		fmt.Fprintln(os.Stderr, "bin/kubectl not found: run `make tools` first")
		return 1
	}
	return m.Run()
}

// runKubectl runs bin/kubectl with args (and stdin, if any) against the
// test's control plane and returns its stdout and stderr.
func runKubectl(ctx context.Context, stdin []byte, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", adminKubeconfig}, args...)...)
	cmd.Dir = env.Root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// render runs `kubectl kustomize` on the base config/<base> and returns the
// YAML and its objects.
func render(t *testing.T, base string) ([]byte, []*unstructured.Unstructured) {
	t.Helper()
	out, stderr, err := runKubectl(context.Background(), nil, "kustomize", filepath.Join("config", base))
	if err != nil {
		t.Fatalf("kubectl kustomize config/%s: %v\n%s", base, err, stderr)
	}
	objs, err := decodeAll([]byte(out))
	if err != nil {
		t.Fatalf("config/%s renders YAML that does not decode: %v", base, err)
	}
	return []byte(out), objs
}

// decodeAll decodes a stream of YAML documents into objects.
func decodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(u.Object) == 0 {
			continue // an empty document
		}
		objs = append(objs, u)
	}
}

// readObjects decodes the YAML file at path, relative to the repository.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, path))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}
