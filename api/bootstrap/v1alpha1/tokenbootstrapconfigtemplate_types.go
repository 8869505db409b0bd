package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/millwright-dev/millwright/api/v1alpha1"
)

// TokenBootstrapConfigTemplateResource is what each TokenBootstrapConfig
// cloned from a template starts as.
type TokenBootstrapConfigTemplateResource struct {
	// Metadata holds the labels and annotations every clone gets.
	// +optional
	ObjectMeta corev1alpha1.ObjectMeta `json:"metadata,omitempty"`

	// Spec of every clone.
	// +optional
	Spec TokenBootstrapConfigSpec `json:"spec,omitempty"`
}

// TokenBootstrapConfigTemplateSpec is the desired state of a
// TokenBootstrapConfigTemplate.
type TokenBootstrapConfigTemplateSpec struct {
	// Template is cloned into one TokenBootstrapConfig per Machine of a MachineSet.
	Template TokenBootstrapConfigTemplateResource `json:"template"`
}

// TokenBootstrapConfigTemplateStatus is the observed state of a
// TokenBootstrapConfigTemplate; nothing is reported yet.
type TokenBootstrapConfigTemplateStatus struct{}

// TokenBootstrapConfigTemplate is a template of TokenBootstrapConfigs:
// MachineSets and MachineDeployments clone it into one TokenBootstrapConfig
// per Machine, so that every Machine has a token of its own.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=tokenbootstrapconfigtemplates,shortName=tbct,scope=Namespaced,categories=millwright
// +kubebuilder:metadata:labels="machine.millwright.dev/v1beta1=v1alpha1"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TokenBootstrapConfigTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the template.
	Spec TokenBootstrapConfigTemplateSpec `json:"spec"`
	// Status is empty for now; it exists so the kind has the status
	// subresource every provider kind has.
	// +optional
	Status TokenBootstrapConfigTemplateStatus `json:"status,omitempty"`
}

// TokenBootstrapConfigTemplateList is a list of TokenBootstrapConfigTemplates.
//
// +kubebuilder:object:root=true
type TokenBootstrapConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the TokenBootstrapConfigTemplates.
	Items []TokenBootstrapConfigTemplate `json:"items"`
}
