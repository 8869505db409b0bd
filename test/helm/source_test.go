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
// controller-gen writes from the code's markers), some carved into several
// (hack/chartgen): the roles annotated with one source grant together
// exactly what that source grants, in the same namespace (the release's
// where config/ has millwright-system).
func TestRolesAreConfigs(t *testing.T) {
	const ns = "mw-roles"
	r := render(t, ns, nil)
	type role struct {
		namespace string
		grants    []string
	}
	// collect maps a role's key ("Kind name"; for the chart, its source
	// annotation) to its namespace and each thing it grants.
	collect := func(what string, objs []*unstructured.Unstructured, bySource bool) map[string]*role {
		m := map[string]*role{}
		for _, u := range objs {
			var rules []rbacv1.PolicyRule
			switch u.GetKind() {
			case "ClusterRole":
				cr := &rbacv1.ClusterRole{}
				testenv.FromUnstructured(t, u, cr)
				rules = cr.Rules
			case "Role":
				ro := &rbacv1.Role{}
				testenv.FromUnstructured(t, u, ro)
				rules = ro.Rules
			default:
				continue
			}
			key := u.GetKind() + " " + u.GetName()
			if bySource {
				if key = u.GetAnnotations()["millwright.dev/rbac-source"]; key == "" {
					t.Errorf("%s: %s %s has no millwright.dev/rbac-source", what, u.GetKind(), u.GetName())
					continue
				}
			} else if _, dup := m[key]; dup {
				t.Errorf("%s has two %s", what, key)
			}
			rr := m[key]
			if rr == nil {
				rr = &role{namespace: u.GetNamespace()}
				m[key] = rr
			}
			if rr.namespace != u.GetNamespace() {
				t.Errorf("%s: roles from %s in namespaces %q and %q", what, key, rr.namespace, u.GetNamespace())
			}
			rr.grants = append(rr.grants, flatten(rules)...)
		}
		for _, rr := range m {
			slices.Sort(rr.grants)
			rr.grants = slices.Compact(rr.grants)
		}
		return m
	}
	want := collect("config/rbac/role.yaml", decode(t, "config/rbac/role.yaml", readFile(t, "config/rbac/role.yaml")), false)
	got := collect("the chart", r.objects, true)
	if len(want) == 0 {
		t.Fatal("config/rbac/role.yaml holds no roles")
	}
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("the chart has no role from %s: run `make generate`", key)
			continue
		}
		if w.namespace == "millwright-system" {
			w.namespace = ns
		}
		if g.namespace != w.namespace {
			t.Errorf("%s: in namespace %q, want %q", key, g.namespace, w.namespace)
		}
		if !slices.Equal(g.grants, w.grants) {
			t.Errorf("%s: the chart's rules differ from config/rbac/role.yaml's: run `make generate`\n%s", key, lineDiff(strings.Join(w.grants, "\n"), strings.Join(g.grants, "\n")))
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("the chart has roles from %s, which config/rbac/role.yaml does not have", key)
		}
	}
}

// flatten lists each thing rules grant: group, resource, name and verb,
// or URL and verb.
func flatten(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				out = append(out, u+" "+v)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if len(r.ResourceNames) == 0 {
						out = append(out, g+" "+res+" "+v)
					}
					for _, n := range r.ResourceNames {
						out = append(out, g+" "+res+"/"+n+" "+v)
					}
				}
			}
		}
	}
	return out
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
