package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MachineSetSpec is the desired state of a MachineSet.
//
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="spec.selector must not be empty: an empty selector would select every Machine in the namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchLabels) || (has(self.template.metadata) && has(self.template.metadata.labels) && self.selector.matchLabels.all(k, k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k]))",message="spec.selector.matchLabels does not match spec.template.metadata.labels: the MachineSet would not find the Machines it creates"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator == 'In' ? (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels && has(e.values) && self.template.metadata.labels[e.key] in e.values) : e.operator == 'NotIn' ? (!has(self.template.metadata) || !has(self.template.metadata.labels) || !(e.key in self.template.metadata.labels) || !has(e.values) || !(self.template.metadata.labels[e.key] in e.values)) : e.operator == 'Exists' ? (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : (!has(self.template.metadata) || !has(self.template.metadata.labels) || !(e.key in self.template.metadata.labels)))",message="spec.selector.matchExpressions do not match spec.template.metadata.labels: the MachineSet would not find the Machines it creates"
type MachineSetSpec struct {
	// ClusterName is the name of the cluster the Machines join; optional and
	// informative (the cluster-autoscaler reads it).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName,omitempty"`

	// Replicas is the number of Machines to keep. Always present (the
	// cluster-autoscaler scales through it); defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`

	// Selector picks the Machines this MachineSet owns. It must match the
	// template's labels and must not be empty.
	Selector LabelSelector `json:"selector"`

	// Template describes the Machines to create.
	Template MachineTemplateSpec `json:"template"`

	// MinReadySeconds is how long a Machine must be Running before it counts
	// as available.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// DeletePolicy picks scale-down victims once the delete-machine
	// annotation, the priority annotation and the phase have not decided:
	// Random, Newest or Oldest.
	// +optional
	// +kubebuilder:default=Random
	DeletePolicy MachineDeletePolicy `json:"deletePolicy,omitempty"`

	// MaxConcurrentReplacements limits how many unhealthy Machines of this
	// set may be declared Failed and replaced at once (meltdown protection).
	// Default: the manager's --max-concurrent-replacements (1). A MachineSet
	// owned by a MachineDeployment takes the deployment's value.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxConcurrentReplacements *int32 `json:"maxConcurrentReplacements,omitempty"`

	// AutoPreserveFailedMax is how many failed Machines are kept
	// automatically, for debugging, instead of being replaced at once
	// (docs/preservation.md): each keeps its VM and cordoned Node until the
	// preserve timeout, and its replacement is created all the same. A
	// MachineSet owned by a MachineDeployment takes the deployment's value,
	// or 0 while the deployment is being rolled out. Default 0: none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AutoPreserveFailedMax *int32 `json:"autoPreserveFailedMax,omitempty"`

	// FailureDomains places the set's Machines over zones. A MachineSet
	// owned by a MachineDeployment gets it from the deployment's
	// spec.failureDomains (docs/failure-domains.md).
	// +optional
	FailureDomains *FailureDomainPlacement `json:"failureDomains,omitempty"`
}

// MachineSetStatus is what the MachineSet controller observed.
type MachineSetStatus struct {
	// Replicas is the number of Machines the MachineSet owns, not counting
	// preserved ones (preservedReplicas).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// PreservedReplicas is the number of owned Machines kept by
	// preservation (docs/preservation.md): replaced, but not deleted.
	// +optional
	PreservedReplicas int32 `json:"preservedReplicas,omitempty"`

	// FullyLabeledReplicas is the number of owned Machines whose labels
	// match the template's labels.
	// +optional
	FullyLabeledReplicas int32 `json:"fullyLabeledReplicas,omitempty"`

	// ReadyReplicas is the number of owned Machines that are Running.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of owned Machines Running for at least
	// minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// ObservedGeneration is the generation of the MachineSet last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Selector is spec.selector as a string, for the /scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// ProvenTemplate is the hash of the template a Machine of this set has
	// reached Running with (spec.template.spec without nodeTemplate and
	// lifecycle, which change no VM). While it is the current template's,
	// the set creates its Machines without slow start: the template is
	// known to make working Machines. Kept across restarts and scale to
	// zero, so a rollback to this set's revision starts at full speed.
	// +optional
	ProvenTemplate string `json:"provenTemplate,omitempty"`

	// Conditions: ReplicaFailure, Frozen, AutoscalerBoundsValid,
	// TemplateProven.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// FailedMachines lists owned Machines whose last operation failed.
	// +optional
	// +listType=atomic
	FailedMachines []MachineSummary `json:"failedMachines,omitempty"`
}

// TemplateProvenCondition is True on a MachineSet while one of its
// Machines has reached Running with the current template
// (status.provenTemplate): it creates Machines without slow start. False:
// one Machine at a time until one runs.
const TemplateProvenCondition = "TemplateProven"

// SetTemplateAnnotation, on a Machine a MachineSet made, is the hash of
// the template it was made from, in the form of status.provenTemplate:
// when that Machine reaches Running, it proves that template.
const SetTemplateAnnotation = GroupName + "/set-template"

// MachineSet keeps a number of Machines made from one template, like a
// ReplicaSet keeps pods.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=mcs,categories=millwright
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a MachineSet's name is at most 63 characters: it is the value of its Machines' machine.millwright.dev/set-name label"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the MachineSet.
	Spec MachineSetSpec `json:"spec"`

	// Status is what the MachineSet controller observed.
	// +optional
	Status MachineSetStatus `json:"status,omitempty"`
}

// MachineSetList is a list of MachineSets.
//
// +kubebuilder:object:root=true
type MachineSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineSet `json:"items"`
}
