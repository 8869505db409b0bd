package contracttest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// All resources: TypeMeta and ObjectMeta. Both kinds read back with
// apiVersion, kind and the standard metadata, and their schemas declare them.
func (s *suite) testTypeMetaObjectMeta(t *testing.T) {
	w := s.newWorld(t, worldOptions{noOwner: true, noBootstrap: true})
	for _, obj := range []*unstructured.Unstructured{w.get(), s.getTemplate(t, s.newTemplate(t).GetName())} {
		gvk := obj.GroupVersionKind()
		if obj.GetAPIVersion() != gvk.GroupVersion().String() || obj.GetKind() == "" {
			t.Errorf("%s read back with apiVersion %q kind %q", obj.GetName(), obj.GetAPIVersion(), obj.GetKind())
		}
		created := obj.GetCreationTimestamp()
		if obj.GetName() == "" || obj.GetNamespace() != s.ns || obj.GetUID() == "" || obj.GetResourceVersion() == "" || created.IsZero() {
			t.Errorf("%s %s lacks standard object metadata: %v", gvk.Kind, obj.GetName(), obj.Object["metadata"])
		}
		crd := s.crdOf(t, gvk)
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			props, _, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema", "properties")
			for _, f := range []string{"apiVersion", "kind", "metadata"} {
				if _, ok := props[f]; !ok {
					t.Errorf("CRD %s version %v: the schema declares no %s", crd.GetName(), m["name"], f)
				}
			}
		}
	}
}

// InfraMachine: provider ID. Once initialization completed, spec.providerID is set.
func (s *suite) testProviderID(t *testing.T) {
	w := s.newWorld(t, worldOptions{})
	u := w.ready()
	if providerID(u) == "" {
		t.Fatalf("initialization completed but spec.providerID is empty: %s", describe(u))
	}
}

// InfraMachine: failure domain. The InfraMachine is placed in the
// Machine's spec.failureDomain.
func (s *suite) testFailureDomain(t *testing.T) {
	w := s.newWorld(t, worldOptions{failureDomain: s.FailureDomain})
	u := w.ready()
	placed, _, _ := unstructured.NestedString(u.Object, "spec", "failureDomain")
	if s.PlacedIn != nil {
		var err error
		if placed, err = s.PlacedIn(context.Background(), u); err != nil {
			t.Fatalf("PlacedIn: %v", err)
		}
	}
	if placed != s.FailureDomain {
		t.Fatalf("the Machine asks for failure domain %q; the InfraMachine was placed in %q", s.FailureDomain, placed)
	}
}

// InfraMachine: addresses. Surfaced in status.addresses, each with one of
// the accepted types and an address.
func (s *suite) testAddresses(t *testing.T) {
	w := s.newWorld(t, worldOptions{})
	u := w.ready()
	addrs, found, err := unstructured.NestedSlice(u.Object, "status", "addresses")
	if err != nil || !found || len(addrs) == 0 {
		t.Fatalf("status.addresses is empty once initialization completed (%v): %s", err, describe(u))
	}
	for i, a := range addrs {
		m, _ := a.(map[string]any)
		typ, _ := m["type"].(string)
		addr, _ := m["address"].(string)
		if !validAddressType(typ) {
			t.Errorf("status.addresses[%d].type %q is not one of %v", i, typ, validAddressTypes)
		}
		if addr == "" {
			t.Errorf("status.addresses[%d] (%s) has no address", i, typ)
		}
	}
}

// InfraMachine: initialization completed. status.ready and/or
// status.initialization.provisioned become true; when both are there
// they agree.
func (s *suite) testInitialization(t *testing.T) {
	w := s.newWorld(t, worldOptions{})
	u := w.ready()
	ready, hasReady, _ := unstructured.NestedBool(u.Object, "status", "ready")
	provisioned, hasProvisioned, _ := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned")
	if hasReady && hasProvisioned && ready != provisioned {
		t.Errorf("status.ready=%v but status.initialization.provisioned=%v", ready, provisioned)
	}
	if reason, msg := failure(u); reason != "" || msg != "" {
		t.Errorf("a ready InfraMachine reports a terminal failure: %q %q", reason, msg)
	}
}

// InfraMachine: conditions. Metav1-shaped conditions with a Ready
// condition, False before initialization, True after.
func (s *suite) testConditions(t *testing.T) {
	w := s.newWorld(t, worldOptions{noBootstrap: true})
	w.eventually("to report a Ready condition False while it waits for bootstrap data", func(u *unstructured.Unstructured) bool {
		return conditionStatus(u, "Ready") == "False"
	})
	w.patchMachine(func(m *v1alpha1.Machine) { m.Spec.Bootstrap.DataSecretName = ptr.To(w.secret.Name) })
	u := w.eventually("to report Ready True once provisioned", func(u *unstructured.Unstructured) bool {
		return initialized(u) && conditionStatus(u, "Ready") == "True"
	})
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		for _, f := range []string{"type", "status", "lastTransitionTime", "reason"} {
			if v, _ := m[f].(string); v == "" {
				t.Errorf("condition %v has no %s", m["type"], f)
			}
		}
		if st := m["status"]; st != "True" && st != "False" && st != "Unknown" {
			t.Errorf("condition %v has status %v", m["type"], st)
		}
	}
}

// InfraMachine: terminal failures. An InfraMachine that can never work
// reports status.failureReason and status.failureMessage, does not become
// ready, is left alone afterwards, and can still be deleted.
func (s *suite) testTerminalFailures(t *testing.T) {
	w := s.newWorld(t, worldOptions{variant: TerminalFailure})
	u := w.eventually("to report status.failureReason and status.failureMessage", func(u *unstructured.Unstructured) bool {
		reason, msg := failure(u)
		return reason != "" && msg != ""
	})
	if initialized(u) {
		t.Errorf("a terminally failed InfraMachine reports initialization completed: %s", describe(u))
	}
	if !s.skipped(RuleConditions) && conditionStatus(u, "Ready") == "True" {
		t.Errorf("a terminally failed InfraMachine has Ready True")
	}
	// Exit the reconciliation: nothing is written any more.
	rv := u.GetResourceVersion()
	w.never("kept changing after its terminal failure", func(u *unstructured.Unstructured) bool {
		return u.GetResourceVersion() != rv
	})
	if err := s.c.Delete(context.Background(), w.infra); err != nil {
		t.Fatal(err)
	}
	w.gone()
}

// InfraMachineTemplate, InfraMachineTemplateList resource definition: the
// template kind is <InfraMachine>Template, with spec.template.spec.
func (s *suite) testTemplate(t *testing.T) {
	if want := s.InfraMachine.Kind + "Template"; s.InfraMachineTemplate.Kind != want {
		t.Errorf("the template kind is %q; the contract requires %q", s.InfraMachineTemplate.Kind, want)
	}
	if s.InfraMachineTemplate.Group != s.InfraMachine.Group {
		t.Errorf("the template is in group %q, the InfraMachine in %q", s.InfraMachineTemplate.Group, s.InfraMachine.Group)
	}
	got := s.getTemplate(t, s.newTemplate(t).GetName())
	if _, found, _ := unstructured.NestedMap(got.Object, "spec", "template", "spec"); !found {
		t.Errorf("the template has no spec.template.spec: %v", got.Object["spec"])
	}
}

// newTemplate creates a valid InfraMachineTemplate.
func (s *suite) newTemplate(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	var tmpl *unstructured.Unstructured
	if s.NewInfraMachineTemplate != nil {
		tmpl = s.NewInfraMachineTemplate()
	} else {
		spec, _, _ := unstructured.NestedMap(s.NewInfraMachine(Valid).Object, "spec")
		tmpl = &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec}}}}
	}
	tmpl.SetGroupVersionKind(s.InfraMachineTemplate)
	tmpl.SetNamespace(s.ns)
	tmpl.SetName(s.prefix + "-tmpl-" + itoa(s.seq.Add(1)))
	s.create(t, tmpl)
	t.Cleanup(func() { _ = s.c.Delete(context.Background(), tmpl) })
	return tmpl
}

func (s *suite) getTemplate(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(s.InfraMachineTemplate)
	if err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, u); err != nil {
		t.Fatalf("getting %s %s: %v", s.InfraMachineTemplate.Kind, name, err)
	}
	return u
}
