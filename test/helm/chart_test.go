package helm_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// combination is a documented set of values (docs/helm.md).
type combination struct {
	name   string
	values map[string]any
}

var combinations = []combination{
	{name: "default"},
	{name: "driver-deployment", values: map[string]any{
		"driver": map[string]any{"mode": "deployment"},
	}},
	{name: "servicemonitor", values: map[string]any{
		"metrics": map[string]any{
			"serviceMonitor":   map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
			"grafanaDashboard": map[string]any{"enabled": true},
		},
		"manager": map[string]any{"watchNamespace": "machines", "tokenBootstrapProvider": true},
	}},
	{name: "no-driver", values: map[string]any{
		"driver":  map[string]any{"mode": "none"},
		"manager": map[string]any{"replicas": 2, "extraArgs": []any{"--driver=acme=tcp://acme-driver.acme.svc:9000"}},
	}},
}

// Each combination lints clean (`helm lint`: no error, no warning, no
// information but the icon Chart.yaml lacks), renders objects wired together
// consistently, and a real API server accepts all of them (server-side
// apply, strict field validation) with no warning, Pod Security
// "restricted" enforced in the release's namespace; and the applied RBAC
// gives each ServiceAccount what it needs and not more.
func TestChartInstalls(t *testing.T) {
	for _, c := range combinations {
		t.Run(c.name, func(t *testing.T) {
			ns := "mw-" + c.name
			linter := lint.RunAll(chartDir, c.values, ns, lint.WithKubeVersion(&caps.KubeVersion))
			for _, m := range linter.Messages {
				// The one recommendation left: the project has no logo.
				if m.Severity == support.InfoSev && strings.Contains(m.Err.Error(), "icon is recommended") {
					continue
				}
				t.Errorf("helm lint: %s", m)
			}
			r := render(t, ns, c.values)
			checkWiring(t, ns, c.values, r)
			apply(t, ns, c.values, r)
			checkAccess(context.Background(), t, ns, c.values)
			if value(c.values, "manager.bootstrapTokenPolicy") == true {
				checkTokenPolicy(context.Background(), t, ns)
			}
		})
	}
}

// apply creates the release's namespace (as `helm install
// --create-namespace` would, with the restricted Pod Security level) and
// applies every object server-side: the CRDs first, waiting until they
// are served, as Helm does.
func apply(t *testing.T, ns string, values map[string]any, r rendered) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}}}
	if err := env.Client.Create(ctx, namespace); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The watched namespace, holding the Machines, exists before the chart.
	if w, _ := value(values, "manager.watchNamespace").(string); w != "" {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	crds := r.crds
	if slices.ContainsFunc(r.objects, func(u *unstructured.Unstructured) bool { return u.GetKind() == "ServiceMonitor" }) {
		// The Prometheus Operator's CRD, which a cluster using
		// metrics.serviceMonitor.enabled has.
		crds = append(slices.Clone(crds), decode(t, "testdata/servicemonitors.yaml", readFile(t, "test/helm/testdata/servicemonitors.yaml"))...)
	}
	warnings.take()
	for _, u := range crds {
		serverSideApply(ctx, t, u)
	}
	for _, u := range crds {
		established(t, u.GetName())
	}
	for _, u := range r.objects {
		serverSideApply(ctx, t, u)
	}
	for _, w := range warnings.take() {
		t.Errorf("the API server warns: %s", w)
	}
}

func serverSideApply(ctx context.Context, t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if err := applier.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
		t.Errorf("applying %s: %v", testenv.ObjectID(u), err)
	}
}

// established waits until the API server serves the CRD name.
func established(t *testing.T, name string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "CRD "+name+" established", func() (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// value reads a dotted path of values, the combination's over the chart's.
func value(values map[string]any, path string) any {
	if v, ok := lookup(values, path); ok {
		return v
	}
	v, _ := lookup(millwright.Values, path)
	return v
}

func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}
