package machinedeployment

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// capacityKeys are the scale-from-zero annotations this controller owns on
// a group whose MachineClass has a nodeTemplate.
var capacityKeys = []string{
	v1alpha1.AutoscalerCapacityCPU, v1alpha1.AutoscalerCapacityMemory, v1alpha1.AutoscalerCapacityEphemeralDisk,
	v1alpha1.AutoscalerCapacityMaxPods, v1alpha1.AutoscalerCapacityGPUCount, v1alpha1.AutoscalerCapacityGPUType,
	v1alpha1.AutoscalerCapacityLabels, v1alpha1.AutoscalerCapacityTaints,
}

// capacityAnnotations describes one Node of a group the way the
// cluster-autoscaler's clusterapi provider reads it to scale the group up
// from zero: cpu, memory and ephemeral-disk as resource quantities
// ("4", "16Gi"), maxPods and gpu-count as integers, gpu-type as the GPU's
// resource name (nvidia.com/gpu), labels as "k=v,k=v" and taints as
// "k=v:Effect,k:Effect", both sorted so the text only changes when they do.
//
// The Node is the class's nodeTemplate — its capacity, its labels and the
// well-known labels of its instance type, region, zone and architecture,
// its taints — with the Machine template's nodeTemplate labels and taints
// over it, since Millwright puts those on the Node too.
//
// The zone label describes every Node of the group or is left out
// (docs/autoscaling.md): spread is the zones of the deployment's
// spec.failureDomains (nil without), whose Machines' Nodes are labelled
// with their own zone; without, the class's zone when it has only one.
// A group over several zones advertises none, so a pending pod pinned to
// one zone is not taken for one this group's next Node would fit.
func capacityAnnotations(class *v1alpha1.NodeTemplate, node *v1alpha1.NodeTemplateSpec, spread []string) map[string]string {
	out := map[string]string{}
	quantity := func(key string, name corev1.ResourceName) {
		if q, ok := class.Capacity[name]; ok {
			out[key] = q.String()
		}
	}
	quantity(v1alpha1.AutoscalerCapacityCPU, corev1.ResourceCPU)
	quantity(v1alpha1.AutoscalerCapacityMemory, corev1.ResourceMemory)
	quantity(v1alpha1.AutoscalerCapacityEphemeralDisk, corev1.ResourceEphemeralStorage)
	if q, ok := class.Capacity[corev1.ResourcePods]; ok {
		out[v1alpha1.AutoscalerCapacityMaxPods] = strconv.FormatInt(q.Value(), 10)
	}
	if gpu := gpuResource(class.Capacity); gpu != "" {
		q := class.Capacity[gpu]
		out[v1alpha1.AutoscalerCapacityGPUType] = string(gpu)
		out[v1alpha1.AutoscalerCapacityGPUCount] = strconv.FormatInt(q.Value(), 10)
	}
	if l := formatLabels(nodeLabels(class, node, spread)); l != "" {
		out[v1alpha1.AutoscalerCapacityLabels] = l
	}
	if t := formatTaints(nodeTaints(class, node)); t != "" {
		out[v1alpha1.AutoscalerCapacityTaints] = t
	}
	return out
}

// gpuResource is the GPU among the capacity's resources (nvidia.com/gpu,
// amd.com/gpu, ...): the first by name if there are several, since the
// autoscaler knows one GPU type per group.
func gpuResource(capacity corev1.ResourceList) corev1.ResourceName {
	var names []string
	for name := range capacity {
		if strings.HasSuffix(string(name), "/gpu") {
			names = append(names, string(name))
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return corev1.ResourceName(names[0])
}

func nodeLabels(class *v1alpha1.NodeTemplate, node *v1alpha1.NodeTemplateSpec, spread []string) map[string]string {
	labels := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			labels[k] = v
		}
	}
	set(corev1.LabelInstanceTypeStable, class.InstanceType)
	set(corev1.LabelTopologyRegion, class.Region)
	if zones := nodeTemplateZones(class); len(zones) == 1 {
		set(corev1.LabelTopologyZone, zones[0])
	}
	if class.Architecture != nil {
		set(corev1.LabelArchStable, *class.Architecture)
	}
	maps.Copy(labels, class.Labels)
	if node != nil {
		maps.Copy(labels, node.Metadata.Labels)
	}
	switch {
	case len(spread) == 1:
		labels[corev1.LabelTopologyZone] = spread[0]
	case len(spread) > 1:
		delete(labels, corev1.LabelTopologyZone)
	}
	return labels
}

// nodeTaints merges the class's taints with the template's; a template
// taint replaces a class taint of the same key and effect, as on the Node.
func nodeTaints(class *v1alpha1.NodeTemplate, node *v1alpha1.NodeTemplateSpec) []corev1.Taint {
	type id struct {
		key    string
		effect corev1.TaintEffect
	}
	byID := map[id]corev1.Taint{}
	for _, t := range class.Taints {
		byID[id{t.Key, t.Effect}] = t
	}
	if node != nil {
		for _, t := range node.Taints {
			byID[id{t.Key, t.Effect}] = t
		}
	}
	return slices.Collect(maps.Values(byID))
}

func formatLabels(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func formatTaints(taints []corev1.Taint) string {
	parts := make([]string, 0, len(taints))
	for _, t := range taints {
		kv := t.Key
		if t.Value != "" {
			kv += "=" + t.Value
		}
		parts = append(parts, kv+":"+string(t.Effect))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// applyCapacity writes want into annotations, removing the capacity keys
// want lacks; it reports whether anything changed.
func applyCapacity(annotations *map[string]string, want map[string]string) bool {
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	a := *annotations
	changed := false
	for _, k := range capacityKeys {
		v, ok := want[k]
		cur, has := a[k]
		switch {
		case ok && (!has || cur != v):
			a[k] = v
			changed = true
		case !ok && has:
			delete(a, k)
			changed = true
		}
	}
	return changed
}
