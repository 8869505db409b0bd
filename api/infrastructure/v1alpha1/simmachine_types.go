package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	corev1alpha1 "github.com/millwright-dev/millwright/api/v1alpha1"
)

// SimMachineSpec is the desired state of a SimMachine: one VM in the
// simulated cloud.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerID) || (has(self.providerID) && self.providerID == oldSelf.providerID)",message="spec.providerID is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.failureDomain) || (has(self.failureDomain) && self.failureDomain == oldSelf.failureDomain)",message="spec.failureDomain is immutable once set"
// +kubebuilder:validation:XValidation:rule="has(self.providerSpec) == has(oldSelf.providerSpec) && (!has(self.providerSpec) || self.providerSpec == oldSelf.providerSpec)",message="spec.providerSpec is immutable: a SimMachine has one VM for life; replace the Machine to change it"
type SimMachineSpec struct {
	// ProviderID is the VM's ID as its Node's spec.providerID
	// (sim://region/zone/vm-id). Set by the SimMachine controller once the
	// VM exists; immutable once set. Millwright copies it onto the Machine.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID *string `json:"providerID,omitempty"`

	// FailureDomain is the sim zone the VM is placed in. When set before
	// the VM is created, the VM is created there, and it must be one of
	// providerSpec.zones; when unset, the controller picks one of
	// providerSpec.zones and records it here. Immutable once set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	FailureDomain *string `json:"failureDomain,omitempty"`

	// ProviderSpec is exactly the sim driver's providerSpec, as a
	// MachineClass of provider "sim" carries it: region, zones,
	// instanceType, tags, bootDelay, bootJitter, requireInitialization and
	// faults (see internal/provider/sim). A value the sim refuses is a
	// terminal failure (failureReason InvalidConfiguration). Immutable.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	ProviderSpec runtime.RawExtension `json:"providerSpec,omitempty"`
}

// SimMachineInitializationStatus is the newer form of the contract's
// "initialization completed" signal.
type SimMachineInitializationStatus struct {
	// Provisioned is true once the VM exists and is initialized; it never
	// goes back to false. It always equals status.ready.
	// +optional
	Provisioned bool `json:"provisioned,omitempty"`
}

// SimMachineStatus is the observed state of a SimMachine.
type SimMachineStatus struct {
	// Ready is true once the VM exists and is initialized (the contract's
	// "initialization completed"); spec.providerID is set by then. It is
	// never reset: the Ready condition tells the current state.
	// +optional
	Ready bool `json:"ready"`

	// Initialization carries provisioned, the same signal as ready in the
	// newer contract form.
	// +optional
	Initialization *SimMachineInitializationStatus `json:"initialization,omitempty"`

	// Addresses of the VM: its InternalIP and its Hostname (the Node's name).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Addresses []corev1alpha1.MachineAddress `json:"addresses,omitempty"`

	// FailureReason is set, for programs, when the SimMachine can never
	// become ready (InvalidConfiguration, CreateError, UpdateError); the
	// controller then does nothing more until the SimMachine is deleted.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	FailureReason *string `json:"failureReason,omitempty"`

	// FailureMessage says, for people, why the SimMachine failed for good.
	// +optional
	// +kubebuilder:validation:MaxLength=10240
	FailureMessage *string `json:"failureMessage,omitempty"`

	// Conditions: Ready (the whole lifecycle, deletion included) and
	// Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SimMachine is a VM in Millwright's simulated cloud, made for the Machine
// that owns it (the InfraMachine of the sim provider).
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=simmachines,shortName=simm,scope=Namespaced,categories=millwright
// +kubebuilder:metadata:labels="machine.millwright.dev/v1beta1=v1alpha1"
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.failureReason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SimMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired VM.
	// +optional
	Spec SimMachineSpec `json:"spec,omitempty"`
	// Status is the VM as the controller last saw it.
	// +optional
	Status SimMachineStatus `json:"status,omitempty"`
}

// SimMachineList is a list of SimMachines.
//
// +kubebuilder:object:root=true
type SimMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the SimMachines.
	Items []SimMachine `json:"items"`
}
