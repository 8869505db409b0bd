package contracttest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// crdOf finds the CRD serving gvk's group and kind, whatever its name.
func (s *suite) crdOf(t *testing.T, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(crdGVK.GroupVersion().WithKind("CustomResourceDefinitionList"))
	if err := s.c.List(context.Background(), list); err != nil {
		t.Fatalf("listing CRDs: %v", err)
	}
	for i := range list.Items {
		crd := &list.Items[i]
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if group == gvk.Group && kind == gvk.Kind {
			return crd
		}
	}
	t.Fatalf("no CRD serves kind %s of group %s: install the provider's CRDs", gvk.Kind, gvk.Group)
	return nil
}

// kinds are the two resources every CRD rule applies to.
func (s *suite) kinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{s.InfraMachine, s.InfraMachineTemplate}
}

// servedVersions lists the CRD's served versions.
func servedVersions(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			name, _ := m["name"].(string)
			out = append(out, name)
		}
	}
	return out
}

// All resources: scope. They MUST be namespace-scoped.
func (s *suite) testScope(t *testing.T) {
	for _, gvk := range s.kinds() {
		crd := s.crdOf(t, gvk)
		if scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope"); scope != "Namespaced" {
			t.Errorf("CRD %s has scope %q; the contract requires Namespaced", crd.GetName(), scope)
		}
	}
}

// All resources: APIVersion field value. The CRD carries the contract
// label, machine.millwright.dev/v1beta1, listing served versions.
func (s *suite) testContractLabel(t *testing.T) {
	for _, gvk := range s.kinds() {
		crd := s.crdOf(t, gvk)
		value, ok := crd.GetLabels()[v1alpha1.ContractLabel]
		if !ok || value == "" {
			t.Errorf("CRD %s has no label %s: Millwright cannot tell which version honours contract %s",
				crd.GetName(), v1alpha1.ContractLabel, v1alpha1.ContractVersion)
			continue
		}
		served := servedVersions(crd)
		listed := strings.Split(value, "_")
		for _, v := range listed {
			if !slices.Contains(served, v) {
				t.Errorf("CRD %s label %s=%q names version %q, which the CRD does not serve (served: %v)",
					crd.GetName(), v1alpha1.ContractLabel, value, v, served)
			}
		}
		if !slices.Contains(listed, gvk.Version) {
			t.Errorf("CRD %s label %s=%q does not list %s, the version the provider is tested with",
				crd.GetName(), v1alpha1.ContractLabel, value, gvk.Version)
		}
		t.Logf("%s: Millwright will use version %s (the last listed)", crd.GetName(), listed[len(listed)-1])
	}
}

// InfraMachine(Template), InfraMachine(Template)List resource definition:
// the list kind is <Kind>List and the API serves it.
func (s *suite) testListResource(t *testing.T) {
	w := s.newWorld(t, worldOptions{noOwner: true, noBootstrap: true})
	tmpl := s.newTemplate(t)
	for _, obj := range []*unstructured.Unstructured{w.infra, tmpl} {
		gvk := obj.GroupVersionKind()
		crd := s.crdOf(t, gvk)
		if listKind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "listKind"); listKind != gvk.Kind+"List" {
			t.Errorf("CRD %s has listKind %q; the contract requires %s", crd.GetName(), listKind, gvk.Kind+"List")
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := s.c.List(context.Background(), list, client.InNamespace(s.ns)); err != nil {
			t.Errorf("listing %sList: %v", gvk.Kind, err)
			continue
		}
		found := false
		for _, it := range list.Items {
			found = found || it.GetName() == obj.GetName()
		}
		if !found {
			t.Errorf("%sList of namespace %s lacks %s", gvk.Kind, s.ns, obj.GetName())
		}
	}
}

// InfraMachine resource definition: the CRD is named as
// contract.CalculateCRDName(group, kind) computes, <plural>.<group>, so
// Millwright can read its labels without a lookup.
func (s *suite) testCRDName(t *testing.T) {
	for _, gvk := range s.kinds() {
		crd := s.crdOf(t, gvk)
		want := CRDName(gvk.GroupKind())
		if crd.GetName() != want {
			t.Errorf("the CRD of %s is named %q; the contract requires %q", gvk.Kind, crd.GetName(), want)
		}
	}
}

// CRDName is the name the contract requires for the CRD of gk: the
// lower-case plural of its kind, a dot, its group (as Cluster API's
// contract.CalculateCRDName, with English plurals).
func CRDName(gk schema.GroupKind) string {
	return plural(strings.ToLower(gk.Kind)) + "." + gk.Group
}

func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "z"),
		strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	case len(s) > 1 && strings.HasSuffix(s, "y") && !strings.ContainsAny(s[len(s)-2:len(s)-1], "aeiou"):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}
