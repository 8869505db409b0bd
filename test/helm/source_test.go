package helm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/millwright-dev/millwright/internal/testenv"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The chart's CRDs are config/crd/bases' files, byte for byte: no CRD
// missing, none left over, none edited.
func TestCRDsAreConfigs(t *testing.T) {
	want, err := filepath.Glob(filepath.Join(env.Root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(want) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	var got []string
	for _, crd := range millwright.CRDObjects() {
		got = append(got, filepath.Base(crd.Name))
		if !bytes.Equal(crd.File.Data, readFile(t, filepath.Join("config", "crd", "bases", filepath.Base(crd.Name)))) {
			t.Errorf("the chart's %s differs from config/crd/bases': run `make generate`", crd.Name)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, filepath.Base(w)) {
			t.Errorf("the chart lacks the CRD %s: run `make generate`", filepath.Base(w))
		}
	}
	if len(got) != len(want) {
		t.Errorf("the chart has %d CRDs, config/crd/bases %d", len(got), len(want))
	}
}

// The roles the chart renders are those of config/rbac/role.yaml (what
// controller-gen writes from the code's markers): the same kinds, names
// and rules, in the release's namespace where config/ has
// millwright-system.
func TestRolesAreConfigs(t *testing.T) {
	const ns = "mw-roles"
	r := render(t, ns, nil)
	type role struct {
		namespace string
		rules     []rbacv1.PolicyRule
	}
	collect := func(what string, objs []*unstructured.Unstructured) map[string]role {
		m := map[string]role{}
		for _, u := range objs {
			var rr role
			switch u.GetKind() {
			case "ClusterRole":
				cr := &rbacv1.ClusterRole{}
				testenv.FromUnstructured(t, u, cr)
				rr.rules = cr.Rules
			case "Role":
				ro := &rbacv1.Role{}
				testenv.FromUnstructured(t, u, ro)
				rr.namespace, rr.rules = ro.Namespace, ro.Rules
			default:
				continue
			}
			key := u.GetKind() + " " + u.GetName()
			if _, dup := m[key]; dup {
				t.Errorf("%s has two %s", what, key)
			}
			m[key] = rr
		}
		return m
	}
	want := collect("config/rbac/role.yaml", decode(t, "config/rbac/role.yaml", readFile(t, "config/rbac/role.yaml")))
	got := collect("the chart", r.objects)
	if len(want) == 0 {
		t.Fatal("config/rbac/role.yaml holds no roles")
	}
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("the chart has no %s: run `make generate`", key)
			continue
		}
		if w.namespace == "millwright-system" {
			w.namespace = ns
		}
		if g.namespace != w.namespace {
			t.Errorf("%s: in namespace %q, want %q", key, g.namespace, w.namespace)
		}
		if !equality.Semantic.DeepEqual(g.rules, w.rules) {
			t.Errorf("%s: the chart's rules differ from config/rbac/role.yaml's: run `make generate`\nchart:  %+v\nconfig: %+v", key, g.rules, w.rules)
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("the chart has %s, which config/rbac/role.yaml does not", key)
		}
	}
}

// `helm show values` prints the chart's raw values.yaml (what the loader
// keeps in Raw), where a comment introduces every top-level value; and
// docs/helm.md names every value.
func TestValuesAreDocumented(t *testing.T) {
	var raw string
	for _, f := range millwright.Raw {
		if f.Name == "values.yaml" {
			raw = string(f.Data)
		}
	}
	lines := strings.Split(raw, "\n")
	topLevel := regexp.MustCompile(`^[A-Za-z]\w*:`)
	for i, l := range lines {
		if topLevel.MatchString(l) && (i == 0 || !strings.HasPrefix(lines[i-1], "#")) {
			t.Errorf("values.yaml: no comment above %q", l)
		}
	}
	doc := string(readFile(t, "docs/helm.md"))
	for _, path := range leaves("", millwright.Values) {
		if !regexp.MustCompile("`" + regexp.QuoteMeta(path) + "`").MatchString(doc) {
			t.Errorf("docs/helm.md does not document the value `%s`", path)
		}
	}
}

// leaves lists the dotted paths of a values tree's leaves (a list, an
// empty map or a container's resources block is a leaf).
func leaves(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 && k != "resources" {
			out = append(out, leaves(p, sub)...)
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
