// Package helm_test checks the Helm chart charts/millwright with Helm's
// own Go packages: it renders for the default values and the documented
// combinations, is lint-clean, and what it renders is accepted by a real
// kube-apiserver (server-side apply, Pod Security "restricted" enforced);
// its CRDs and roles are those of config/, and docs/helm.md documents
// every value.
package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/millwright-dev/millwright/internal/testenv"
)

var (
	env *testenv.Env
	// chartDir is charts/millwright.
	chartDir string
	// millwright is the chart, loaded.
	millwright *chart.Chart
	// caps are the test API server's: its Kubernetes version.
	caps *common.Capabilities
	// applier applies server-side and keeps the API server's warnings.
	applier  client.Client
	warnings = &warningRecorder{}
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) error {
		env = e
		return setUp()
	}))
}

func setUp() error {
	chartDir = filepath.Join(env.Root, "charts", "millwright")
	var err error
	if millwright, err = loader.Load(chartDir); err != nil {
		return fmt.Errorf("loading the chart: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return err
	}
	kv, err := common.ParseKubeVersion(info.GitVersion)
	if err != nil {
		return err
	}
	caps = common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv

	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warnings
	applier, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	return err
}
