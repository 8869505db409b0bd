package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectMeta is the part of object metadata a template may set: labels and
// annotations. Names, namespaces and owners are chosen by the controllers.
type ObjectMeta struct {
	// Labels to put on the created object. A MachineSet or MachineDeployment
	// selector must match the labels of its template.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="labels keys must be valid label keys: an optional DNS subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="labels values must be valid label values: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations to put on the created object. Keys are checked as the
	// API server checks annotation keys.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k.lowerAscii()).hasValue())",message="annotations keys must be valid annotation keys: an optional DNS subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.map(k, size(k) + size(self[k])).sum() <= 262144",message="annotations may total at most 256 KiB (keys and values), as on any object"
	Annotations map[string]string `json:"annotations,omitempty"`
}

// MachineOperationType names the kind of operation the machine controller
// last performed on a Machine.
// +kubebuilder:validation:Enum=Create;Initialize;Update;HealthCheck;Drain;Delete
type MachineOperationType string

// The operations recorded in LastOperation.Type.
const (
	OperationCreate      MachineOperationType = "Create"
	OperationInitialize  MachineOperationType = "Initialize"
	OperationUpdate      MachineOperationType = "Update"
	OperationHealthCheck MachineOperationType = "HealthCheck"
	OperationDrain       MachineOperationType = "Drain"
	OperationDelete      MachineOperationType = "Delete"
)

// MachineOperationState is where the last operation stands.
// +kubebuilder:validation:Enum=Processing;Succeeded;Failed
type MachineOperationState string

// The states recorded in LastOperation.State.
const (
	OperationProcessing MachineOperationState = "Processing"
	OperationSucceeded  MachineOperationState = "Succeeded"
	OperationFailed     MachineOperationState = "Failed"
)

// LastOperation is the last operation the machine controller performed on a
// Machine and how it went. It is for people; controllers decide from fields
// and conditions, never from the description.
type LastOperation struct {
	// Type of the operation: Create, Initialize, Update, HealthCheck, Drain or Delete.
	// +optional
	Type MachineOperationType `json:"type,omitempty"`

	// State of the operation: Processing, Succeeded or Failed.
	// +optional
	State MachineOperationState `json:"state,omitempty"`

	// Description says, for a person, what happened or what is being waited for.
	// +optional
	Description string `json:"description,omitempty"`

	// ErrorCode is the driver's machine error code name (for example
	// ResourceExhausted) when the operation failed.
	// +optional
	ErrorCode string `json:"errorCode,omitempty"`

	// FailureCount is how many times in a row this operation has failed; it
	// drives the exponential backoff and survives manager restarts.
	// +optional
	FailureCount int32 `json:"failureCount,omitempty"`

	// LastUpdateTime is when this record last changed.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
}

// MachineSummary names a Machine and its last operation; MachineSets and
// MachineDeployments list their failed Machines with it.
type MachineSummary struct {
	// Name of the Machine.
	Name string `json:"name"`

	// ProviderID of the Machine's VM, if one was created.
	// +optional
	ProviderID string `json:"providerID,omitempty"`

	// LastOperation of the Machine.
	// +optional
	LastOperation LastOperation `json:"lastOperation,omitempty"`

	// OwnerRef is the name of the MachineSet that owns the Machine.
	// +optional
	OwnerRef string `json:"ownerRef,omitempty"`
}

// NodeTemplateSpec is what Millwright keeps applied to the Node of a Machine:
// labels, annotations and taints. It merges three ways with what others put
// on the Node: keys Millwright applied and later dropped are removed, keys
// others added are kept.
type NodeTemplateSpec struct {
	// Metadata holds the labels and annotations to apply to the Node.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`

	// Taints to apply to the Node.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, !format.qualifiedName().validate(t.key).hasValue())",message="taints: each key must be a valid taint key (a label key: an optional DNS subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.')"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.value) || !format.labelValue().validate(t.value).hasValue())",message="taints: each value must be a valid label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
	// +kubebuilder:validation:XValidation:rule="self.all(t, has(t.effect) && t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taints: each effect must be NoSchedule, PreferNoSchedule or NoExecute"
	// +kubebuilder:validation:XValidation:rule="self.all(t, self.exists_one(u, u.key == t.key && u.effect == t.effect))",message="taints must be unique by key and effect"
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// MachineLifecycle overrides, for one Machine, the manager's lifecycle
// defaults (the manager's flags). Unset fields use the flags.
type MachineLifecycle struct {
	// CreationTimeout is how long a Machine may take from creation until its
	// Node is Ready before it is declared Failed and replaced. Default: the
	// manager's --machine-creation-timeout (20m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="spec.lifecycle.creationTimeout must be a positive duration such as 20m"
	CreationTimeout *metav1.Duration `json:"creationTimeout,omitempty"`

	// HealthTimeout is how long a Running Machine may stay unhealthy (phase
	// Unknown) before it is declared Failed and replaced. Default: the
	// manager's --machine-health-timeout (10m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="spec.lifecycle.healthTimeout must be a positive duration such as 10m"
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`

	// DrainTimeout is how long a graceful drain may take before the Node is
	// drained by force (pods deleted without waiting for disruption budgets).
	// Default: the manager's --machine-drain-timeout (2h).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="spec.lifecycle.drainTimeout must be a positive duration such as 2h"
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`

	// NodeDeletionTimeout is how long the deletion of a Machine retries
	// deleting its Node, once its VM is gone, before it finishes without it
	// (a Warning Event says so): a target cluster that cannot be reached
	// must not hold the Machine forever. "0s" retries forever. Default: the
	// manager's --node-deletion-timeout (10m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.lifecycle.nodeDeletionTimeout must be a duration of zero or more such as 10m"
	NodeDeletionTimeout *metav1.Duration `json:"nodeDeletionTimeout,omitempty"`

	// PreserveTimeout is how long a preserved Machine is kept
	// (docs/preservation.md), counted from when its preservation started.
	// Default: the manager's --machine-preserve-timeout (72h).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="spec.lifecycle.preserveTimeout must be a positive duration such as 72h"
	PreserveTimeout *metav1.Duration `json:"preserveTimeout,omitempty"`

	// MaxEvictRetries is how many times the eviction of one pod is retried
	// while a disruption budget refuses it, before the pod is deleted.
	// Default: the manager's --max-evict-retries.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxEvictRetries *int32 `json:"maxEvictRetries,omitempty"`

	// NodeConditions are Node condition types that make the Machine unhealthy
	// while their status is True (in addition to Ready not being True).
	// Default: the manager's --node-conditions
	// (KernelDeadlock, ReadonlyFilesystem, DiskPressure, NetworkUnavailable).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$'))",message="spec.lifecycle.nodeConditions entries must be Node condition types such as KernelDeadlock: letters, digits, '-', '_' and '.', optionally prefixed by a DNS name and '/'"
	NodeConditions []string `json:"nodeConditions,omitempty"`
}
