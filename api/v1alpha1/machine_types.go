package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MachineSpec is the desired state of a Machine. A Machine is backed either
// by a driver (spec.class) or by a provider's own object (spec.infrastructureRef).
//
// +kubebuilder:validation:XValidation:rule="has(self.class) != has(self.infrastructureRef)",message="exactly one of spec.class (a MachineClass, for driver providers) or spec.infrastructureRef (an InfraMachine, for contract providers) must be set"
type MachineSpec struct {
	// ClusterName is the name of the cluster the Machine's Node joins. It is
	// optional and only informative; the cluster-autoscaler reads it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName,omitempty"`

	// Class names the MachineClass whose driver creates this Machine's VM.
	// Immutable, except that an in-place update moves the Machine to the
	// class it applied (status.inPlaceUpdate, docs/in-place-updates.md).
	// +optional
	Class *MachineClassReference `json:"class,omitempty"`

	// Version is the Kubernetes version the Machine's Node should run
	// (v1.36.3). Bootstrap providers render it for the node; an in-place
	// update to another version is carried out by the node agent
	// (docs/in-place-updates.md). Changed only by an in-place update.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z][0-9A-Za-z.-]*)?$`
	Version string `json:"version,omitempty"`

	// InfrastructureRef points at the provider's InfraMachine object (for
	// example a SimMachine) that a provider controller reconciles into a VM.
	// Immutable.
	// +optional
	InfrastructureRef *ContractReference `json:"infrastructureRef,omitempty"`

	// Bootstrap says where the VM's bootstrap data (user data) comes from:
	// a bootstrap provider's config object, or a Secret named directly.
	// +optional
	Bootstrap Bootstrap `json:"bootstrap,omitempty"`

	// ProviderID is the provider's unique ID of the VM, as its Node's
	// spec.providerID (for example sim://region/zone/vm-1). Set by Millwright
	// once the VM exists; immutable once set.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// FailureDomain is where the VM is placed (for example a zone). Copied
	// from the InfraMachine for contract providers.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	FailureDomain string `json:"failureDomain,omitempty"`

	// NodeTemplate holds labels, annotations and taints Millwright keeps on
	// the Machine's Node.
	// +optional
	NodeTemplate NodeTemplateSpec `json:"nodeTemplate,omitempty"`

	// Lifecycle overrides the manager's timeouts and health rules for this Machine.
	// +optional
	Lifecycle MachineLifecycle `json:"lifecycle,omitempty"`
}

// MachineClassReference names a MachineClass in the Machine's namespace.
type MachineClassReference struct {
	// Name of the MachineClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="spec.class.name must be a MachineClass name (a DNS subdomain)"
	Name string `json:"name"`
}

// ContractReference points at a provider's object in the same namespace,
// reconciled by the provider's controller under Millwright's contract.
type ContractReference struct {
	// APIGroup of the referenced object, for example infrastructure.millwright.dev.
	// Its version is read from the provider CRD's contract label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="apiGroup must be an API group (a DNS subdomain such as infrastructure.millwright.dev)"
	APIGroup string `json:"apiGroup"`

	// Kind of the referenced object, for example SimMachine.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="name must be an object name (a DNS subdomain)"
	Name string `json:"name"`
}

// Bootstrap says where a Machine's bootstrap data comes from. With neither
// field set, a driver Machine uses its class Secret's userData.
type Bootstrap struct {
	// ConfigRef points at a bootstrap provider's config object (for example
	// a TokenBootstrapConfig). Once that object reports its data Secret, the
	// Secret's name is copied to dataSecretName.
	// +optional
	ConfigRef *ContractReference `json:"configRef,omitempty"`

	// DataSecretName names a Secret in the Machine's namespace whose key
	// "value" holds the bootstrap data. While a configRef is set and this is
	// empty, the Machine stays Pending.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="spec.bootstrap.dataSecretName must be a Secret name: a DNS subdomain (lowercase letters, digits, '-' and '.'), not empty"
	DataSecretName *string `json:"dataSecretName,omitempty"`
}

// MachinePhase summarises, for people and printer columns, where a Machine
// is in its life. Controllers decide from fields and conditions instead.
// +kubebuilder:validation:Enum=Pending;Provisioning;CrashLoopBackOff;Provisioned;Running;Unknown;Failed;Terminating
type MachinePhase string

// The phases of a Machine.
const (
	// PhasePending: waiting for prerequisites: bootstrap data, class, secret.
	PhasePending MachinePhase = "Pending"
	// PhaseProvisioning: the VM is being created.
	PhaseProvisioning MachinePhase = "Provisioning"
	// PhaseCrashLoopBackOff: the last create or initialize failed with a retryable code; retrying with backoff.
	PhaseCrashLoopBackOff MachinePhase = "CrashLoopBackOff"
	// PhaseProvisioned: the VM exists; waiting for its Node to register and be Ready.
	PhaseProvisioned MachinePhase = "Provisioned"
	// PhaseRunning: the Node is Ready and healthy.
	PhaseRunning MachinePhase = "Running"
	// PhaseUnknown: was Running, now unhealthy or its Node is gone; the health timeout runs.
	PhaseUnknown MachinePhase = "Unknown"
	// PhaseFailed: terminal; the owner replaces the Machine.
	PhaseFailed MachinePhase = "Failed"
	// PhaseTerminating: being deleted: hooks, drain, VM deletion, Node deletion.
	PhaseTerminating MachinePhase = "Terminating"
)

// Condition types of a Machine.
const (
	// BootstrapReadyCondition: the bootstrap data is available.
	BootstrapReadyCondition = "BootstrapReady"
	// InfrastructureReadyCondition: the VM exists and is provisioned.
	InfrastructureReadyCondition = "InfrastructureReady"
	// NodeReadyCondition: the Node exists and its Ready condition is True.
	NodeReadyCondition = "NodeReady"
	// NodeHealthyCondition: none of the configured unhealthy Node conditions is True.
	NodeHealthyCondition = "NodeHealthy"
	// DrainedCondition: the Node was drained (set during deletion).
	DrainedCondition = "Drained"
	// ReadyCondition: the Machine is Running.
	ReadyCondition = "Ready"
	// PausedCondition: reconciliation is paused by annotation or by the owning MachineDeployment.
	PausedCondition = "Paused"
	// PreservedCondition: True while the Machine is preserved (docs/preservation.md):
	// its owner neither deletes nor counts it, its Node is cordoned and tainted.
	// False when preservation was asked but expired or the request is invalid.
	PreservedCondition = "Preserved"
	// InPlaceUpdateCondition: how the Machine's in-place update
	// (status.inPlaceUpdate, docs/in-place-updates.md) stands: Unknown
	// while it runs, True once it succeeded, False when it failed or the
	// driver refused it (the reason says which).
	InPlaceUpdateCondition = "InPlaceUpdate"
	// CreateQueuedCondition: set only on a Machine
	// whose create had to wait for a slot of its class's
	// spec.maxConcurrentCreates: True while it waits (its creation timeout
	// does not run), False once its create started (the timeout counts
	// from then).
	CreateQueuedCondition = "CreateQueued"
	// InterruptedCondition: True once the provider announced that it takes
	// the Machine's VM away (a spot interruption, a scheduled retirement;
	// docs/interruptions.md), with status.interruptionDeadline when it said
	// when. Its MachineSet creates the replacement first, then deletes the
	// Machine, whose drain is forced at the deadline. The reason says what
	// was announced; it is never set back to False.
	InterruptedCondition = "Interrupted"
)

// Reasons of the Interrupted condition.
const (
	// InterruptionReason: the driver announced an interruption
	// (driver.VMInterruption); the message has the provider's words.
	InterruptionReason = "Interruption"
)

// Reasons of the Preserved condition.
const (
	// PreservedNowReason: the preserve annotation is "now".
	PreservedNowReason = "PreserveRequested"
	// PreservedWhenFailedReason: the preserve annotation is "when-failed" and the Machine failed.
	PreservedWhenFailedReason = "PreservedAfterFailure"
	// PreservedAutoReason: its MachineSet keeps it under spec.autoPreserveFailedMax.
	PreservedAutoReason = "AutoPreserved"
	// PreserveExpiredReason: the preserve timeout ended; the request is ignored until it is removed.
	PreserveExpiredReason = "PreserveExpired"
	// PreserveInvalidReason: a preserve annotation has a value that is not one of the known ones.
	PreserveInvalidReason = "InvalidPreserveValue"
	// PreserveOptedOutReason: the Machine alone would be preserved (its
	// MachineSet's automatic mark), but its Node's preserve annotation is "false".
	PreserveOptedOutReason = "PreserveOptedOut"
)

// NodeReference names the Node a Machine became.
type NodeReference struct {
	// Kind is always "Node".
	// +kubebuilder:validation:Enum=Node
	// +kubebuilder:default=Node
	Kind string `json:"kind"`

	// Name of the Node.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// MachineAddressType is the kind of a Machine address.
// +kubebuilder:validation:Enum=Hostname;ExternalIP;InternalIP;ExternalDNS;InternalDNS
type MachineAddressType string

// The kinds of Machine addresses, as those of a Node.
const (
	MachineHostName    MachineAddressType = "Hostname"
	MachineExternalIP  MachineAddressType = "ExternalIP"
	MachineInternalIP  MachineAddressType = "InternalIP"
	MachineExternalDNS MachineAddressType = "ExternalDNS"
	MachineInternalDNS MachineAddressType = "InternalDNS"
)

// MachineAddress is one address of a Machine's VM.
type MachineAddress struct {
	// Type of the address: Hostname, ExternalIP, InternalIP, ExternalDNS or InternalDNS.
	Type MachineAddressType `json:"type"`

	// Address is the address itself.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Address string `json:"address"`
}

// MachineStatus is what Millwright observed of a Machine and where its
// lifecycle stands.
type MachineStatus struct {
	// Phase summarises where the Machine is in its life, for people.
	// +optional
	Phase MachinePhase `json:"phase,omitempty"`

	// NodeRef names the Node the Machine became, once it registered.
	// +optional
	NodeRef *NodeReference `json:"nodeRef,omitempty"`

	// NodeName is the name the provider says the Machine's Node will register with.
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// Addresses of the Machine's VM.
	// +optional
	// +listType=atomic
	Addresses []MachineAddress `json:"addresses,omitempty"`

	// Conditions: BootstrapReady, InfrastructureReady, NodeReady, NodeHealthy,
	// Drained, Ready, Paused, Preserved.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastOperation is the last operation performed on the Machine and how it went.
	// +optional
	LastOperation LastOperation `json:"lastOperation,omitempty"`

	// UnhealthySince is when the Machine was last seen turning unhealthy
	// (phase Unknown); the health timeout runs from here. Cleared when healthy.
	// +optional
	UnhealthySince *metav1.Time `json:"unhealthySince,omitempty"`

	// PreservedUntil is when the Machine's preservation ends, while it is
	// preserved (condition Preserved True): its start plus the preserve timeout.
	// +optional
	PreservedUntil *metav1.Time `json:"preservedUntil,omitempty"`

	// InterruptionDeadline is when the provider takes the Machine's VM away,
	// as its driver announced it (condition Interrupted True): what is left
	// of the Node's drain is forced then. Unset when no deadline was given.
	// +optional
	InterruptionDeadline *metav1.Time `json:"interruptionDeadline,omitempty"`

	// Deletion records how far the deletion has got; set once the Machine is deleted.
	// +optional
	Deletion *MachineDeletionStatus `json:"deletion,omitempty"`

	// LastKnownState is opaque state the driver asked to keep about the VM and
	// receives back on its next call.
	// +optional
	LastKnownState string `json:"lastKnownState,omitempty"`

	// FailureReason is a terse, machine-readable reason the Machine failed
	// for good. Once set it cannot be cleared; the owner replaces the Machine.
	// +optional
	FailureReason string `json:"failureReason,omitempty"`

	// FailureMessage explains, for a person, why the Machine failed for good.
	// Once set it cannot be cleared.
	// +optional
	FailureMessage string `json:"failureMessage,omitempty"`

	// ObservedGeneration is the generation of the Machine last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// NodeVersion is the kubelet version the Machine's Node reports
	// (status.nodeInfo.kubeletVersion).
	// +optional
	NodeVersion string `json:"nodeVersion,omitempty"`

	// InPlaceUpdate is the in-place update under way, or the last one that
	// finished (docs/in-place-updates.md). The machine controller resumes
	// from it after a restart.
	// +optional
	InPlaceUpdate *InPlaceUpdateStatus `json:"inPlaceUpdate,omitempty"`
}

// InPlaceUpdatePhase is how far a Machine's in-place update has got.
// +kubebuilder:validation:Enum=Draining;Updating;WaitingForNode;Succeeded;Failed;Refused
type InPlaceUpdatePhase string

// The phases of an in-place update.
const (
	// InPlaceDraining: the Node is cordoned and being drained.
	InPlaceDraining InPlaceUpdatePhase = "Draining"
	// InPlaceUpdating: the driver is applying the new class to the VM (UpdateMachine).
	InPlaceUpdating InPlaceUpdatePhase = "Updating"
	// InPlaceWaitingForNode: the node agent was handed the new version (NodeUpdateLabel) and is applying it.
	InPlaceWaitingForNode InPlaceUpdatePhase = "WaitingForNode"
	// InPlaceSucceeded: the update is applied; the Machine moves (or has moved) to the target set and is uncordoned.
	InPlaceSucceeded InPlaceUpdatePhase = "Succeeded"
	// InPlaceFailed: the update failed or timed out; the Machine stays cordoned in its old set.
	InPlaceFailed InPlaceUpdatePhase = "Failed"
	// InPlaceRefused: the driver said the change cannot be made in place
	// (UpdateMachine answered FailedPrecondition); the Machine is replaced instead.
	InPlaceRefused InPlaceUpdatePhase = "Refused"
)

// InPlaceUpdateStatus records one in-place update of a Machine.
type InPlaceUpdateStatus struct {
	// TargetSet is the MachineSet whose template is being applied.
	// +kubebuilder:validation:MaxLength=253
	TargetSet string `json:"targetSet"`

	// Class is the MachineClass the update applies (the target template's).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Class string `json:"class,omitempty"`

	// Version is the Kubernetes version the update applies (the target template's).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// Phase is how far the update has got.
	Phase InPlaceUpdatePhase `json:"phase"`

	// StartedAt is when the update started; updateTimeout runs from here.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// FinishedAt is when the update succeeded, failed or was refused.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// Message says, for people, what happened last.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// Drain is the progress of the Node's drain while the phase is
	// Draining, so a restarted manager resumes it (eviction rounds, the
	// volume wait) instead of starting over.
	// +optional
	Drain *DrainStatus `json:"drain,omitempty"`
}

// Machine is one VM (or bare-metal host) that becomes one Node. Millwright
// creates it through a driver or a provider, watches its Node's health,
// drains the Node before deleting it, and deletes the VM.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mach,categories=millwright
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeRef.name`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Node-Version",type=string,JSONPath=`.status.nodeVersion`,priority=1
// +kubebuilder:printcolumn:name="Update",type=string,JSONPath=`.status.inPlaceUpdate.phase`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="(has(self.spec.class) == has(oldSelf.spec.class) && (!has(self.spec.class) || self.spec.class == oldSelf.spec.class)) || (has(self.spec.class) && has(oldSelf.spec.class) && has(oldSelf.status) && has(oldSelf.status.inPlaceUpdate) && oldSelf.status.inPlaceUpdate.phase == 'Succeeded' && has(oldSelf.status.inPlaceUpdate.class) && self.spec.class.name == oldSelf.status.inPlaceUpdate.class)",message="spec.class is immutable (only an in-place update that succeeded moves a Machine to another class); create a new Machine instead"
// +kubebuilder:validation:XValidation:rule="(has(self.spec.version) == has(oldSelf.spec.version) && (!has(self.spec.version) || self.spec.version == oldSelf.spec.version)) || (has(oldSelf.status) && has(oldSelf.status.inPlaceUpdate) && oldSelf.status.inPlaceUpdate.phase == 'Succeeded' && has(self.spec.version) == has(oldSelf.status.inPlaceUpdate.version) && (!has(self.spec.version) || self.spec.version == oldSelf.status.inPlaceUpdate.version))",message="spec.version changes only through an in-place update (a MachineDeployment with strategy InPlace); create a new Machine instead"
// +kubebuilder:validation:XValidation:rule="has(self.spec.infrastructureRef) == has(oldSelf.spec.infrastructureRef) && (!has(self.spec.infrastructureRef) || self.spec.infrastructureRef == oldSelf.spec.infrastructureRef)",message="spec.infrastructureRef is immutable; create a new Machine instead"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec.providerID) || size(oldSelf.spec.providerID) == 0 || (has(self.spec.providerID) && self.spec.providerID == oldSelf.spec.providerID)",message="spec.providerID is immutable once set: it identifies the Machine's VM"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.failureReason) || (has(self.status) && has(self.status.failureReason))",message="status.failureReason is terminal: once set it cannot be cleared"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.failureMessage) || (has(self.status) && has(self.status.failureMessage))",message="status.failureMessage is terminal: once set it cannot be cleared"
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Machine.
	Spec MachineSpec `json:"spec"`

	// Status is what Millwright observed of the Machine.
	// +optional
	Status MachineStatus `json:"status,omitempty"`
}

// MachineList is a list of Machines.
//
// +kubebuilder:object:root=true
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Machine `json:"items"`
}
