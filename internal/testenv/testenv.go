// Package testenv starts a real control plane for tests: the kube-apiserver
// and etcd built into bin/ by `make tools`, with Millwright's CRDs installed,
// through controller-runtime's envtest.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/repo"
)

// Env is a running control plane with Millwright's CRDs installed.
type Env struct {
	// Root is the repository's root directory.
	Root string
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a (non-caching) client for core and Millwright kinds.
	Client client.Client
	// Scheme knows the core kinds and Millwright's.
	Scheme *runtime.Scheme

	env *envtest.Environment
}

// Scheme returns a scheme with the core Kubernetes kinds, CRDs (tests
// register contract providers' kinds), Millwright's, and those of more
// (a provider's AddToScheme).
func Scheme(more ...func(*runtime.Scheme) error) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme}, more...) {
		if err := add(s); err != nil {
			panic(err) // static registration; cannot fail at run time
		}
	}
	return s
}

// Start starts etcd and kube-apiserver from bin/ and installs the CRDs from
// config/crd/bases. Stop it with Stop.
func Start() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, name)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make tools` first", name, assets)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest control plane: %w", err)
	}
	scheme := Scheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &Env{Root: root, Config: cfg, Client: c, Scheme: scheme, env: env}, nil
}

// Stop stops the control plane and removes its data.
func (e *Env) Stop() error {
	return e.env.Stop()
}

// WriteKubeconfig writes an administrator kubeconfig for the control plane
// into dir and returns its path, for tools such as kubectl.
func (e *Env) WriteKubeconfig(dir string) (string, error) {
	user, err := e.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

// RepoRoot returns the repository root (see repo.Root).
func RepoRoot() (string, error) { return repo.Root() }
