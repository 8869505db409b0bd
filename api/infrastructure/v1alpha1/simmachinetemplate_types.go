package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/millwright-dev/millwright/api/v1alpha1"
)

// SimMachineTemplateResource is what each SimMachine cloned from a
// template starts as.
type SimMachineTemplateResource struct {
	// Metadata holds the labels and annotations every clone gets.
	// +optional
	ObjectMeta corev1alpha1.ObjectMeta `json:"metadata,omitempty"`

	// Spec of every clone. Leave providerID unset: each clone's is its own.
	// +kubebuilder:validation:XValidation:rule="!has(self.providerID)",message="spec.template.spec.providerID must not be set: every SimMachine gets its own"
	Spec SimMachineSpec `json:"spec"`
}

// SimMachineTemplateSpec is the desired state of a SimMachineTemplate.
type SimMachineTemplateSpec struct {
	// Template is cloned into one SimMachine per Machine of a MachineSet.
	Template SimMachineTemplateResource `json:"template"`
}

// SimMachineTemplateStatus is the observed state of a SimMachineTemplate.
type SimMachineTemplateStatus struct {
	// Capacity is what a Node made from this template has (cpu, memory,
	// ephemeral-storage, pods), for scale-from-zero: the resources of
	// providerSpec.instanceType. Filled by the SimMachineTemplate controller
	// of millwright-sim (--infra-controller); empty while that does not run
	// or when the sim refuses the providerSpec (a Warning Event says why).
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
}

// SimMachineTemplate is a template of SimMachines, the
// InfraMachineTemplate of the sim provider: MachineSets and
// MachineDeployments clone it into one SimMachine per Machine.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=simmachinetemplates,shortName=simmt,scope=Namespaced,categories=millwright
// +kubebuilder:metadata:labels="machine.millwright.dev/v1beta1=v1alpha1"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SimMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the template.
	Spec SimMachineTemplateSpec `json:"spec"`
	// Status reports what Machines from the template look like.
	// +optional
	Status SimMachineTemplateStatus `json:"status,omitempty"`
}

// SimMachineTemplateList is a list of SimMachineTemplates.
//
// +kubebuilder:object:root=true
type SimMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the SimMachineTemplates.
	Items []SimMachineTemplate `json:"items"`
}
