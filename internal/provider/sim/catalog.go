package sim

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// InstanceType is a VM size the sim offers. Its resources are the Node's
// capacity unless the class's nodeTemplate.capacity says otherwise.
type InstanceType struct {
	Name             string
	CPU              string
	Memory           string
	EphemeralStorage string
	Pods             string
	Architecture     string
}

// DefaultInstanceType is used when a providerSpec names none.
const DefaultInstanceType = "sim.small"

var instanceTypes = map[string]InstanceType{
	"sim.small":  {Name: "sim.small", CPU: "2", Memory: "4Gi", EphemeralStorage: "50Gi", Pods: "110", Architecture: "amd64"},
	"sim.medium": {Name: "sim.medium", CPU: "4", Memory: "8Gi", EphemeralStorage: "100Gi", Pods: "110", Architecture: "amd64"},
	"sim.large":  {Name: "sim.large", CPU: "8", Memory: "16Gi", EphemeralStorage: "200Gi", Pods: "110", Architecture: "amd64"},
	"sim.xlarge": {Name: "sim.xlarge", CPU: "16", Memory: "32Gi", EphemeralStorage: "400Gi", Pods: "250", Architecture: "amd64"},
	"sim.arm":    {Name: "sim.arm", CPU: "4", Memory: "8Gi", EphemeralStorage: "100Gi", Pods: "110", Architecture: "arm64"},
}

// InstanceTypeNames lists the sim's instance types, sorted.
func InstanceTypeNames() []string {
	names := make([]string, 0, len(instanceTypes))
	for n := range instanceTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Resources returns the instance type's resources as a Node capacity.
func (t InstanceType) Resources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(t.CPU),
		corev1.ResourceMemory:           resource.MustParse(t.Memory),
		corev1.ResourceEphemeralStorage: resource.MustParse(t.EphemeralStorage),
		corev1.ResourcePods:             resource.MustParse(t.Pods),
	}
}

// LookupInstanceType returns the instance type of that name, for code
// outside the sim that must know a VM's resources before one exists (the
// SimMachineTemplate controller's status.capacity).
func LookupInstanceType(name string) (InstanceType, bool) {
	t, ok := instanceTypes[name]
	return t, ok
}
