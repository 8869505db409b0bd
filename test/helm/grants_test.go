package helm_test

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// update rewrites the golden files of TestGrantsAreGolden instead of
// comparing with them: go test ./test/helm -run TestGrantsAreGolden -update
var update = flag.Bool("update", false, "rewrite test/helm/testdata/grants/*.txt from the chart")

// grantCombinations are the combinations whose grants are checked in: the
// documented ones, and a driver that does not use the cluster's API.
var grantCombinations = append(slices.Clone(combinations),
	combination{name: "libvirt-sidecar", values: map[string]any{
		"driver": map[string]any{"name": "libvirt", "command": []any{"/millwright-libvirt"}, "args": []any{}},
	}},
	combination{name: "watch-namespace-deployment", values: map[string]any{
		"driver":  map[string]any{"mode": "deployment"},
		"manager": map[string]any{"watchNamespace": "machines"},
	}},
)

// What each ServiceAccount of the release may do, in each combination,
// is the checked-in list in testdata/grants: a chart change that widens
// (or narrows) a grant changes that file, so it shows in review. The list
// follows the bindings the chart renders, so a role bound in a mode that
// does not need it shows too.
func TestGrantsAreGolden(t *testing.T) {
	for _, c := range grantCombinations {
		t.Run(c.name, func(t *testing.T) {
			ns := "mw-" + c.name
			got := grantsOf(t, ns, render(t, ns, c.values).objects)
			path := filepath.Join(env.Root, "test", "helm", "testdata", "grants", c.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with -update)", err)
			}
			if got != string(want) {
				t.Errorf("the chart's grants differ from %s (review, then rewrite it with -update):\n%s", path, lineDiff(string(want), got))
			}
		})
	}
}

// grantsOf lists, one line per ServiceAccount, namespace (* for a
// ClusterRoleBinding), API group, resource (with its name, if the rule
// names some) and verb, what the rendered bindings grant the release's
// ServiceAccounts. The release's namespace is written RELEASE.
func grantsOf(t *testing.T, ns string, objs []*unstructured.Unstructured) string {
	t.Helper()
	rules := map[string][]rbacv1.PolicyRule{} // "Kind name" or "Role namespace/name"
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			testenv.FromUnstructured(t, u, r)
			rules["ClusterRole "+r.Name] = r.Rules
		case "Role":
			r := &rbacv1.Role{}
			testenv.FromUnstructured(t, u, r)
			rules["Role "+r.Namespace+"/"+r.Name] = r.Rules
		}
	}
	lines := map[string]bool{}
	grant := func(scope string, subjects []rbacv1.Subject, ref rbacv1.RoleRef, bindingNS string) {
		key := "ClusterRole " + ref.Name
		if ref.Kind == "Role" {
			key = "Role " + bindingNS + "/" + ref.Name
		}
		rs, ok := rules[key]
		if !ok {
			t.Errorf("a binding refers to %s, which the chart does not render", key)
		}
		for _, s := range subjects {
			if s.Kind != "ServiceAccount" || s.Namespace != ns {
				t.Errorf("a binding to %s %s/%s, not one of the release's ServiceAccounts", s.Kind, s.Namespace, s.Name)
				continue
			}
			for _, r := range rs {
				for _, v := range r.Verbs {
					for _, url := range r.NonResourceURLs {
						lines[fmt.Sprintf("%s\t*\tnonResourceURL\t%s\t%s", s.Name, url, v)] = true
					}
					for _, g := range r.APIGroups {
						for _, res := range r.Resources {
							names := r.ResourceNames
							if len(names) == 0 {
								names = []string{""}
							}
							for _, n := range names {
								if n != "" {
									n = "/" + n
								}
								group := g
								if group == "" {
									group = "core"
								}
								lines[fmt.Sprintf("%s\t%s\t%s\t%s%s\t%s", s.Name, scope, group, res, n, v)] = true
							}
						}
					}
				}
			}
		}
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			testenv.FromUnstructured(t, u, b)
			grant("*", b.Subjects, b.RoleRef, "")
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			testenv.FromUnstructured(t, u, b)
			scope := b.Namespace
			if scope == ns {
				scope = "RELEASE"
			}
			grant(scope, b.Subjects, b.RoleRef, b.Namespace)
		}
	}
	out := slices.Sorted(maps.Keys(lines))
	return "# service account\tnamespace (* all)\tAPI group\tresource[/name]\tverb\n" + strings.Join(out, "\n") + "\n"
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
