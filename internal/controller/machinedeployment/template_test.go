package machinedeployment_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestInPlaceChangesKeepMachines: labels, annotations, nodeTemplate and
// lifecycle reach the existing Machines without replacing them.
func TestInPlaceChangesKeepMachines(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", controllertest.SimSpec)
	h.deployment("web", 2, "v1", nil)
	h.waitComplete("web", 60*time.Second)
	before := h.machines("web")

	h.update("web", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Template.Metadata.Labels["team"] = "infra"
		md.Spec.Template.Metadata.Annotations = map[string]string{"note": "x"}
		md.Spec.Template.Spec.NodeTemplate.Metadata.Labels = map[string]string{"role": "web"}
		md.Spec.Template.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: 3 * time.Minute}
		md.Spec.MinReadySeconds = 1
	})
	h.Eventually(30*time.Second, "the change on every Machine", func() (bool, error) {
		for _, m := range h.machines("web") {
			if m.Labels["team"] != "infra" || m.Annotations["note"] != "x" ||
				m.Spec.NodeTemplate.Metadata.Labels["role"] != "web" || m.Spec.Lifecycle.HealthTimeout == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if !sameNames(h.machines("web"), before) {
		t.Error("an in-place change replaced Machines")
	}
	sets := h.sets("web")
	if len(sets) != 1 {
		t.Fatalf("an in-place change made %d MachineSets", len(sets))
	}
	if ms := sets[0]; ms.Labels["team"] != "infra" || ms.Spec.MinReadySeconds != 1 {
		t.Errorf("set labels %v, minReadySeconds %d", ms.Labels, ms.Spec.MinReadySeconds)
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	h := newHarness(t)
	for _, c := range []string{"v1", "v2", "v3", "v4"} {
		h.Class(c, controllertest.SimSpec)
	}
	h.deployment("web", 1, "v1", func(md *v1alpha1.MachineDeployment) { md.Spec.RevisionHistoryLimit = ptr.To[int32](1) })
	h.waitComplete("web", 60*time.Second)
	for _, c := range []string{"v2", "v3", "v4"} {
		h.update("web", useClass(c))
		h.waitComplete("web", 60*time.Second)
	}
	h.Eventually(20*time.Second, "one old set kept, the newest old one", func() (bool, error) {
		sets := h.setsByRevision("web")
		_, has3 := sets[3]
		_, has4 := sets[4]
		return len(sets) == 2 && has3 && has4, nil
	})
}

func TestAutoscalerAnnotations(t *testing.T) {
	h := newHarness(t)
	class := h.Class("gpu", controllertest.SimSpec)
	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.NodeTemplate = &v1alpha1.NodeTemplate{
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("1"),
		},
		InstanceType: "sim.large",
		Labels:       map[string]string{"accelerator": "a100"},
		Taints:       []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
	}
	if err := controllertest.Env.Client.Patch(ctx, class, patch); err != nil {
		t.Fatal(err)
	}
	h.deployment("web", 0, "gpu", func(md *v1alpha1.MachineDeployment) {
		md.Annotations = map[string]string{
			v1alpha1.AutoscalerMinSizeAnnotation: "0", v1alpha1.AutoscalerMaxSizeAnnotation: "5",
		}
		md.Spec.Template.Spec.NodeTemplate.Metadata.Labels = map[string]string{"role": "ml"}
	})
	want := map[string]string{
		v1alpha1.AutoscalerCapacityCPU:      "4",
		v1alpha1.AutoscalerCapacityMemory:   "16Gi",
		v1alpha1.AutoscalerCapacityMaxPods:  "110",
		v1alpha1.AutoscalerCapacityGPUCount: "1",
		v1alpha1.AutoscalerCapacityGPUType:  "nvidia.com/gpu",
		v1alpha1.AutoscalerCapacityLabels:   "accelerator=a100,node.kubernetes.io/instance-type=sim.large,role=ml",
		v1alpha1.AutoscalerCapacityTaints:   "gpu=true:NoSchedule",
	}
	hasAll := func(a map[string]string) bool {
		for k, v := range want {
			if a[k] != v {
				return false
			}
		}
		return true
	}
	h.Eventually(20*time.Second, "capacity annotations on the deployment and its set", func() (bool, error) {
		sets := h.sets("web")
		return hasAll(h.md("web").Annotations) && len(sets) == 1 && hasAll(sets[0].Annotations), nil
	})
	h.waitCondition("web", v1alpha1.AutoscalerBoundsCondition, metav1.ConditionTrue, "BoundsValid", 10*time.Second)

	// The class changes: so do the annotations.
	class = &v1alpha1.MachineClass{}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: h.NS, Name: "gpu"}, class); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(class.DeepCopy())
	class.Spec.NodeTemplate.Capacity[corev1.ResourceCPU] = resource.MustParse("8")
	if err := controllertest.Env.Client.Patch(ctx, class, patch); err != nil {
		t.Fatal(err)
	}
	want[v1alpha1.AutoscalerCapacityCPU] = "8"
	h.Eventually(20*time.Second, "the new cpu capacity", func() (bool, error) {
		return hasAll(h.md("web").Annotations) && hasAll(h.sets("web")[0].Annotations), nil
	})

	// Bad bounds are reported; no bounds, no condition.
	h.update("web", func(md *v1alpha1.MachineDeployment) {
		md.Annotations[v1alpha1.AutoscalerMinSizeAnnotation] = "3"
		md.Annotations[v1alpha1.AutoscalerMaxSizeAnnotation] = "2"
	})
	h.waitCondition("web", v1alpha1.AutoscalerBoundsCondition, metav1.ConditionFalse, "InvalidBounds", 10*time.Second)
	if c := h.condition("web", v1alpha1.AutoscalerBoundsCondition); !strings.Contains(c.Message, "below min-size 3") {
		t.Errorf("message %q does not say what is wrong", c.Message)
	}
	h.update("web", func(md *v1alpha1.MachineDeployment) {
		delete(md.Annotations, v1alpha1.AutoscalerMinSizeAnnotation)
		delete(md.Annotations, v1alpha1.AutoscalerMaxSizeAnnotation)
	})
	h.Eventually(10*time.Second, "no bounds condition", func() (bool, error) {
		return h.condition("web", v1alpha1.AutoscalerBoundsCondition) == nil, nil
	})
}

// TestHashCollision: the name of the new set is taken by a set of another
// template; collisionCount moves the new set to another name.
func TestHashCollision(t *testing.T) {
	h := newHarness(t)
	h.Class("v1", controllertest.SimSpec)
	h.Class("v2", controllertest.SimSpec)
	h.deployment("web", 1, "v1", nil)
	h.waitComplete("web", 60*time.Second)

	// A deployment of the same template spec learns the hash of v2.
	h.deployment("probe", 0, "v2", nil)
	var hash string
	h.Eventually(10*time.Second, "the probe's set", func() (bool, error) {
		if sets := h.sets("probe"); len(sets) == 1 {
			hash = sets[0].Labels[v1alpha1.TemplateHashLabel]
		}
		return hash != "", nil
	})
	taken := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + "web-" + hash, Namespace: h.NS},
		Spec: v1alpha1.MachineSetSpec{
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "squatter"}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"app": "squatter"}},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "v1"}},
			},
		},
	}
	h.Create(taken)

	h.update("web", useClass("v2"))
	md := h.waitComplete("web", 60*time.Second)
	if md.Status.CollisionCount == nil || *md.Status.CollisionCount != 1 {
		t.Errorf("collisionCount %v, want 1", md.Status.CollisionCount)
	}
	sets := h.setsByRevision("web")
	if ms := sets[2]; ms.Name == taken.Name || ms.Spec.Template.Spec.Class.Name != "v2" {
		t.Errorf("new set %s (%s): want another name than %s", ms.Name, ms.Spec.Template.Spec.Class.Name, taken.Name)
	}
}

// A deployment of contract-provider Machines takes its scale-from-zero
// annotations from the provider template's status.capacity.
func TestAutoscalerAnnotationsFromProviderTemplate(t *testing.T) {
	h := newHarness(t)
	controllertest.RegisterProviderKind(t, "CapMachineTemplate", "v1alpha1")
	tmpl := controllertest.ProviderObject("CapMachineTemplate", h.NS, "big")
	h.Create(tmpl)
	patch := client.MergeFrom(tmpl.DeepCopy())
	tmpl.Object["status"] = map[string]any{"capacity": map[string]any{"cpu": "16", "memory": "64Gi"}}
	if err := controllertest.Env.Client.Status().Patch(ctx, tmpl, patch); err != nil {
		t.Fatal(err)
	}
	h.deployment("web", 0, "", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Template.Spec.Class = nil
		md.Spec.Template.Spec.InfrastructureRef = &v1alpha1.ContractReference{
			APIGroup: controllertest.ProviderGroup, Kind: "CapMachineTemplate", Name: "big"}
		md.Spec.Template.Spec.Bootstrap.DataSecretName = ptr.To("boot")
	})
	h.Eventually(20*time.Second, "capacity annotations from the template", func() (bool, error) {
		a := h.md("web").Annotations
		return a[v1alpha1.AutoscalerCapacityCPU] == "16" && a[v1alpha1.AutoscalerCapacityMemory] == "64Gi", nil
	})
}
