package machinehealthcheck_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// TestExternalRemediationCreatesOneObjectPerUnhealthyMachine: with a
// templateRef, each unhealthy Machine gets one remediation object made
// from the template and owned by it; no Machine is replaced; a Machine
// that recovers loses its object.
func TestExternalRemediationCreatesOneObjectPerUnhealthyMachine(t *testing.T) {
	controllertest.RegisterProviderKind(t, "RebootRemediationTemplate", "")
	controllertest.RegisterProviderKind(t, "RebootRemediation", "")
	h := newHarness(t)
	h.Class("small", `{"region":"local","zones":["local-a"]}`)
	tpl := controllertest.ProviderObject("RebootRemediationTemplate", h.NS, "reboot")
	if err := unstructured.SetNestedField(tpl.Object, "soft", "spec", "template", "spec", "mode"); err != nil {
		t.Fatal(err)
	}
	h.Create(tpl)
	set(h, "ext", 3)
	healthCheck(h, "ext", v1alpha1.MachineHealthCheckSpec{
		Selector: selecting("ext"),
		Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
			nodeCondition("Ready", "False", time.Second),
		}},
		Remediation: v1alpha1.MachineHealthCheckRemediation{TemplateRef: &v1alpha1.RemediationTemplateReference{
			APIVersion: controllertest.ProviderGroup + "/v1alpha1", Kind: "RebootRemediationTemplate", Name: "reboot",
		}},
	})
	ms := waitRunning(h, "ext", 3)
	sick := ms[:2]
	for _, m := range sick {
		setNodeReady(h, m, false)
	}

	h.Eventually(30*time.Second, "a remediation object per unhealthy Machine", func() (bool, error) {
		return len(remediations(h)) == 2, nil
	})
	for _, m := range sick {
		u, err := h.GetProviderObject("RebootRemediation", m.Name)
		if err != nil {
			t.Fatalf("no remediation object for %s: %v", m.Name, err)
		}
		mode, _, _ := unstructured.NestedString(u.Object, "spec", "mode")
		owners := u.GetOwnerReferences()
		if mode != "soft" || len(owners) != 1 || owners[0].UID != m.UID || owners[0].Kind != "Machine" {
			t.Errorf("remediation %s: mode %q, owners %+v; want the template's spec, owned by Machine %s", m.Name, mode, owners, m.UID)
		}
	}
	h.Consistently(3*time.Second, "Millwright to replace nothing itself", func() (bool, error) {
		for _, m := range ms {
			if replaced(h, m.Name) {
				return false, fmt.Errorf("Machine %s was replaced although remediation is external", m.Name)
			}
		}
		if n := len(remediations(h)); n != 2 {
			return false, fmt.Errorf("%d remediation objects; want 2", n)
		}
		return true, nil
	})
	// While its object exists the Machine is being remediated: it says so,
	// and so counts as unavailable in its disruption budgets for as long,
	// not just for a grant's two minutes.
	for _, m := range sick {
		got := getMachine(h, m.Name)
		c := conditionOf(got.Status.Conditions, v1alpha1.HealthCheckSucceededCondition)
		if c == nil || c.Reason != v1alpha1.ExternalRemediationRequestedReason {
			t.Errorf("Machine %s: HealthCheckSucceeded %+v, want reason %s", m.Name, c, v1alpha1.ExternalRemediationRequestedReason)
		}
		if down, why := machinefacts.Unavailable(got); !down || !strings.Contains(why, "remediated externally") {
			t.Errorf("Machine %s: Unavailable = %v (%q), want being remediated externally", m.Name, down, why)
		}
	}

	// One recovers: its remediation object goes, the other's stays.
	setNodeReady(h, sick[0], true)
	h.Eventually(30*time.Second, "the recovered Machine's remediation object to be deleted", func() (bool, error) {
		_, err := h.GetProviderObject("RebootRemediation", sick[0].Name)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if _, err := h.GetProviderObject("RebootRemediation", sick[1].Name); err != nil {
		t.Errorf("the still unhealthy Machine's remediation object: %v", err)
	}
}

func remediations(h *harness) []unstructured.Unstructured {
	h.T.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(controllertest.ProviderGroup + "/v1alpha1")
	list.SetKind("RebootRemediationList")
	if err := controllertest.Env.Client.List(ctx, list, client.InNamespace(h.NS)); err != nil {
		h.T.Fatal(err)
	}
	return list.Items
}
