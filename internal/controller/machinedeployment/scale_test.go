package machinedeployment_test

import (
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

func TestScaleUpAndDown(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.deployment("web", 2, "small", nil)
	md := h.waitComplete("web", 60*time.Second)

	sets := h.sets("web")
	if len(sets) != 1 {
		t.Fatalf("%d MachineSets, want 1", len(sets))
	}
	ms := sets[0]
	hash := ms.Labels[v1alpha1.TemplateHashLabel]
	if hash == "" || ms.Name != md.Name+"-"+hash {
		t.Errorf("MachineSet %s, hash label %q: want <deployment>-<hash>", ms.Name, hash)
	}
	if ref := metav1.GetControllerOf(&ms); ref == nil || ref.UID != md.UID {
		t.Errorf("MachineSet controller = %+v, want the deployment", ref)
	}
	for k, want := range map[string]string{
		"app": "web", v1alpha1.MachineDeploymentNameLabel: md.Name, v1alpha1.AutoscalerDeploymentNameLabel: md.Name,
	} {
		if ms.Labels[k] != want || ms.Spec.Template.Metadata.Labels[k] != want {
			t.Errorf("label %s: set %q, template %q; want %q", k, ms.Labels[k], ms.Spec.Template.Metadata.Labels[k], want)
		}
	}
	if ms.Spec.Selector.MatchLabels[v1alpha1.TemplateHashLabel] != hash || ms.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("selector %+v: want the deployment's plus the hash", ms.Spec.Selector)
	}
	for _, m := range h.machines("web") {
		if m.Labels[v1alpha1.MachineDeploymentNameLabel] != md.Name || m.Labels[v1alpha1.TemplateHashLabel] != hash {
			t.Errorf("machine %s labels %v", m.Name, m.Labels)
		}
	}
	for _, obj := range []map[string]string{ms.Annotations, md.Annotations} {
		if obj[v1alpha1.RevisionAnnotation] != "1" || obj[v1alpha1.AutoscalerRevisionAnnotation] != "1" {
			t.Errorf("revision annotations %v, want 1", obj)
		}
	}
	if ms.Spec.DeletePolicy != v1alpha1.DeletePolicyRandom {
		t.Errorf("deletePolicy %q", ms.Spec.DeletePolicy)
	}
	if !strings.Contains(md.Status.Selector, "app=web") {
		t.Errorf("status.selector %q", md.Status.Selector)
	}
	h.waitCondition("web", v1alpha1.AvailableCondition, metav1.ConditionTrue, "MinimumReplicasAvailable", 5*time.Second)
	h.waitCondition("web", v1alpha1.ProgressingCondition, metav1.ConditionTrue, "NewMachineSetAvailable", 5*time.Second)

	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 4 })
	h.waitComplete("web", 60*time.Second)
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 1 })
	h.waitComplete("web", 60*time.Second)
	if n := len(h.sets("web")); n != 1 {
		t.Errorf("scaling made %d MachineSets", n)
	}
}

func TestScaleSubresource(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	md := h.deployment("web", 1, "small", nil)
	h.waitComplete("web", 60*time.Second)

	scale := &autoscalingv1.Scale{}
	if err := controllertest.Env.Client.SubResource("scale").Get(ctx, md, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Status.Replicas != 1 || !strings.Contains(scale.Status.Selector, "app=web") {
		t.Errorf("scale status %+v", scale.Status)
	}
	scale.Spec.Replicas = 3
	if err := controllertest.Env.Client.SubResource("scale").Update(ctx, md, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	h.waitComplete("web", 60*time.Second)
	if err := controllertest.Env.Client.SubResource("scale").Get(ctx, md, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Status.Replicas != 3 {
		t.Errorf("scale status replicas %d, want 3", scale.Status.Replicas)
	}
}

// TestFrozen: a frozen deployment grows no MachineSet, but shrinks.
func TestFrozen(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.deployment("web", 1, "small", nil)
	h.waitComplete("web", 60*time.Second)

	h.update("web", func(md *v1alpha1.MachineDeployment) {
		md.Labels = map[string]string{v1alpha1.FrozenLabel: "true"}
		md.Spec.Replicas = 3
	})
	h.waitCondition("web", v1alpha1.FrozenCondition, metav1.ConditionTrue, "FrozenBySafetyController", 10*time.Second)
	h.Consistently(2*time.Second, "no scale-up while frozen", func() (bool, error) {
		return h.sets("web")[0].Spec.Replicas == 1 && len(h.machines("web")) == 1, nil
	})

	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 0 })
	h.Eventually(30*time.Second, "the scale-down while frozen", func() (bool, error) {
		return h.sets("web")[0].Spec.Replicas == 0 && len(h.machines("web")) == 0, nil
	})

	h.update("web", func(md *v1alpha1.MachineDeployment) {
		delete(md.Labels, v1alpha1.FrozenLabel)
		md.Spec.Replicas = 2
	})
	h.waitComplete("web", 60*time.Second)
	if c := h.condition("web", v1alpha1.FrozenCondition); c != nil {
		t.Errorf("Frozen condition %+v after the label is gone", c)
	}
}
