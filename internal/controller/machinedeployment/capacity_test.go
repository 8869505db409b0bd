package machinedeployment

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestCapacityAnnotations(t *testing.T) {
	const (
		cpu    = v1alpha1.AutoscalerCapacityCPU
		mem    = v1alpha1.AutoscalerCapacityMemory
		disk   = v1alpha1.AutoscalerCapacityEphemeralDisk
		pods   = v1alpha1.AutoscalerCapacityMaxPods
		gpuN   = v1alpha1.AutoscalerCapacityGPUCount
		gpuT   = v1alpha1.AutoscalerCapacityGPUType
		labels = v1alpha1.AutoscalerCapacityLabels
		taints = v1alpha1.AutoscalerCapacityTaints
	)
	q := resource.MustParse
	tests := []struct {
		name  string
		class v1alpha1.NodeTemplate
		node  *v1alpha1.NodeTemplateSpec
		want  map[string]string
	}{
		{"empty", v1alpha1.NodeTemplate{}, nil, map[string]string{}},
		{"resources as quantities and integers", v1alpha1.NodeTemplate{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("16Gi"), corev1.ResourceEphemeralStorage: q("100Gi"),
			corev1.ResourcePods: q("110"), "nvidia.com/gpu": q("2"),
		}}, nil, map[string]string{cpu: "4", mem: "16Gi", disk: "100Gi", pods: "110", gpuN: "2", gpuT: "nvidia.com/gpu"}},
		{"fractional cpu and decimal memory", v1alpha1.NodeTemplate{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: q("1500m"), corev1.ResourceMemory: q("128G"),
		}}, nil, map[string]string{cpu: "1500m", mem: "128G"}},
		{"one GPU type of several, by name", v1alpha1.NodeTemplate{Capacity: corev1.ResourceList{
			"nvidia.com/gpu": q("1"), "amd.com/gpu": q("4"),
		}}, nil, map[string]string{gpuN: "4", gpuT: "amd.com/gpu"}},
		{"well-known and class labels, sorted", v1alpha1.NodeTemplate{
			InstanceType: "sim.large", Region: "local", Zone: "local-a", Architecture: ptr.To("arm64"),
			Labels: map[string]string{"team": "infra"},
		}, nil, map[string]string{labels: "kubernetes.io/arch=arm64,node.kubernetes.io/instance-type=sim.large," +
			"team=infra,topology.kubernetes.io/region=local,topology.kubernetes.io/zone=local-a"}},
		{"taints with and without value", v1alpha1.NodeTemplate{Taints: []corev1.Taint{
			{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule},
			{Key: "dedicated", Effect: corev1.TaintEffectNoExecute},
		}}, nil, map[string]string{taints: "dedicated:NoExecute,gpu=true:NoSchedule"}},
		{"the template's node labels and taints win", v1alpha1.NodeTemplate{
			Labels: map[string]string{"role": "any", "team": "infra"},
			Taints: []corev1.Taint{{Key: "role", Value: "any", Effect: corev1.TaintEffectNoSchedule}},
		}, &v1alpha1.NodeTemplateSpec{
			Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"role": "web"}},
			Taints: []corev1.Taint{
				{Key: "role", Value: "web", Effect: corev1.TaintEffectNoSchedule},
				{Key: "role", Value: "web", Effect: corev1.TaintEffectPreferNoSchedule},
			},
		}, map[string]string{labels: "role=web,team=infra", taints: "role=web:NoSchedule,role=web:PreferNoSchedule"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := capacityAnnotations(&tc.class, tc.node, nil); !maps.Equal(got, tc.want) {
				t.Errorf("capacityAnnotations =\n %v\nwant\n %v", got, tc.want)
			}
		})
	}
}

func TestApplyCapacity(t *testing.T) {
	a := map[string]string{"other": "kept", v1alpha1.AutoscalerCapacityGPUCount: "1", v1alpha1.AutoscalerCapacityCPU: "2"}
	if !applyCapacity(&a, map[string]string{v1alpha1.AutoscalerCapacityCPU: "4"}) {
		t.Fatal("no change reported")
	}
	want := map[string]string{"other": "kept", v1alpha1.AutoscalerCapacityCPU: "4"}
	if !maps.Equal(a, want) {
		t.Errorf("annotations = %v, want %v", a, want)
	}
	if applyCapacity(&a, map[string]string{v1alpha1.AutoscalerCapacityCPU: "4"}) {
		t.Error("a second apply reports a change")
	}
}
