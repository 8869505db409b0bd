package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MachineClassSpec says which driver creates a class's VMs and how.
type MachineClassSpec struct {
	// Provider is the name of the driver that creates, inspects and deletes
	// the VMs of this class (for example "sim"). The manager must have a
	// driver registered under this name (its --driver flag).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.provider must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Provider string `json:"provider"`

	// ProviderSpec is the driver's own description of a VM (size, image,
	// network, ...). Millwright passes it to the driver untouched; the driver
	// validates it and refuses bad values with InvalidArgument.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	ProviderSpec runtime.RawExtension `json:"providerSpec,omitempty"`

	// SecretRef names a Secret whose data is passed to the driver. Its key
	// "userData" is the VM's boot script; the placeholders <<MACHINE_NAME>> and
	// <<BOOTSTRAP_TOKEN>> in it are replaced per Machine. An empty namespace
	// means the class's namespace; another namespace is refused (the
	// Machine waits, BootstrapReady reason SecretRefused).
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.name) && !format.dns1123Subdomain().validate(self.name).hasValue()",message="spec.secretRef.name must be a Secret name (a DNS subdomain)"
	// +kubebuilder:validation:XValidation:rule="!has(self.__namespace__) || self.__namespace__.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.secretRef.namespace must be a namespace name (a DNS label)"
	SecretRef *corev1.SecretReference `json:"secretRef,omitempty"`

	// CredentialsSecretRef names a Secret with the cloud credentials, so that
	// classes with different user data can share one credentials Secret. Its
	// data is merged over SecretRef's when passed to the driver. Like
	// SecretRef, it names a Secret of the class's namespace.
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.name) && !format.dns1123Subdomain().validate(self.name).hasValue()",message="spec.credentialsSecretRef.name must be a Secret name (a DNS subdomain)"
	// +kubebuilder:validation:XValidation:rule="!has(self.__namespace__) || self.__namespace__.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.credentialsSecretRef.namespace must be a namespace name (a DNS label)"
	CredentialsSecretRef *corev1.SecretReference `json:"credentialsSecretRef,omitempty"`

	// NodeTemplate describes the Node a VM of this class becomes, so that
	// the cluster-autoscaler can scale a group up from zero.
	// +optional
	NodeTemplate *NodeTemplate `json:"nodeTemplate,omitempty"`

	// MaxConcurrentCreates bounds the CreateMachine calls in flight at once
	// for the Machines of this class, whatever MachineSet or
	// MachineDeployment they belong to, on top of the manager's
	// --max-concurrent-creates. A Machine over the limit waits, queued,
	// and says so in its status.lastOperation. Unset: only the manager's
	// limit applies (docs/concepts.md, "Provisioning limits").
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="spec.maxConcurrentCreates must be at least 1 (leave it out for no limit of the class's own): with 0 no VM of the class could ever be created"
	MaxConcurrentCreates *int32 `json:"maxConcurrentCreates,omitempty"`

	// MaxConcurrentDeletes bounds the DeleteMachine calls in flight at once
	// for the Machines of this class, as MaxConcurrentCreates does for
	// creates. Unset: no limit of the class's own.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="spec.maxConcurrentDeletes must be at least 1 (leave it out for no limit of the class's own): with 0 no VM of the class could ever be deleted"
	MaxConcurrentDeletes *int32 `json:"maxConcurrentDeletes,omitempty"`
}

// NodeTemplate describes the Node a class's VM will register as: its
// resources, placement and scheduling properties.
type NodeTemplate struct {
	// Capacity is the resources of the Node (cpu, memory, ephemeral-storage,
	// pods, GPUs, ...).
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// InstanceType is the provider's instance type, for the Node's
	// node.kubernetes.io/instance-type label.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.labelValue().validate(self).hasValue()",message="instanceType must be a valid label value (it becomes a Node label): at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	InstanceType string `json:"instanceType,omitempty"`

	// Region is the Node's topology.kubernetes.io/region.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.labelValue().validate(self).hasValue()",message="region must be a valid label value (it becomes a Node label): at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Region string `json:"region,omitempty"`

	// Zone is the Node's topology.kubernetes.io/zone.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.labelValue().validate(self).hasValue()",message="zone must be a valid label value (it becomes a Node label): at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Zone string `json:"zone,omitempty"`

	// Zones a VM of this class can be placed in: the zones a
	// MachineDeployment with failureDomains and no zones of its own
	// spreads over, and the only zones one may list (docs/failure-domains.md).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(z, !format.labelValue().validate(z).hasValue())",message="zones must be valid label values (each becomes a Node's topology.kubernetes.io/zone): at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Zones []string `json:"zones,omitempty"`

	// Architecture is the Node's CPU architecture (kubernetes.io/arch), for
	// example amd64 or arm64.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.labelValue().validate(self).hasValue()",message="architecture must be a valid label value (it becomes a Node label): at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Architecture *string `json:"architecture,omitempty"`

	// Labels the Node will carry.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="labels keys must be valid label keys: an optional DNS subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="labels values must be valid label values: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
	Labels map[string]string `json:"labels,omitempty"`

	// Taints the Node will carry.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, !format.qualifiedName().validate(t.key).hasValue())",message="taints: each key must be a valid taint key (a label key: an optional DNS subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.')"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.value) || !format.labelValue().validate(t.value).hasValue())",message="taints: each value must be a valid label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
	// +kubebuilder:validation:XValidation:rule="self.all(t, has(t.effect) && t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taints: each effect must be NoSchedule, PreferNoSchedule or NoExecute"
	// +kubebuilder:validation:XValidation:rule="self.all(t, self.exists_one(u, u.key == t.key && u.effect == t.effect))",message="taints must be unique by key and effect"
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// MachineClassStatus is what the manager observed of a class.
type MachineClassStatus struct {
	// ObservedGeneration is the generation of the class last observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Machines is how many Machines use the class (being deleted ones
	// included: deleting their VMs needs it).
	// +optional
	Machines int32 `json:"machines,omitempty"`

	// CreatesInFlight is how many CreateMachine calls for Machines of the
	// class the manager has started and not seen end. Counted in the
	// manager's memory and published every few seconds: it may lag, and
	// starts from 0 after a restart (docs/concepts.md).
	// +optional
	CreatesInFlight int32 `json:"createsInFlight,omitempty"`

	// CreatesQueued is how many Machines of the class wait for a create
	// because spec.maxConcurrentCreates are in flight.
	// +optional
	CreatesQueued int32 `json:"createsQueued,omitempty"`

	// DeletesInFlight is how many DeleteMachine calls for Machines of the
	// class are in flight, counted as CreatesInFlight is.
	// +optional
	DeletesInFlight int32 `json:"deletesInFlight,omitempty"`

	// DeletesQueued is how many Machines of the class wait to delete their
	// VM because spec.maxConcurrentDeletes are in flight.
	// +optional
	DeletesQueued int32 `json:"deletesQueued,omitempty"`

	// Conditions of the class: DriverAvailable (the manager has a driver
	// for spec.provider) and InUse (Machines, MachineSets or
	// MachineDeployments reference it, so its deletion waits).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MachineClass condition types.
const (
	// DriverAvailableCondition is True when the manager has a driver
	// registered for the class's spec.provider.
	DriverAvailableCondition = "DriverAvailable"
	// InUseCondition is True while Machines, MachineSets or
	// MachineDeployments reference the class.
	InUseCondition = "InUse"
)

// MachineClass is a reusable description of VMs for one driver: the driver's
// providerSpec, the Secrets with user data and credentials, and what a Node
// from this class will look like.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcc,categories=millwright
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Machines",type=integer,JSONPath=`.status.machines`
// +kubebuilder:printcolumn:name="Creating",type=integer,JSONPath=`.status.createsInFlight`,description="CreateMachine calls in flight"
// +kubebuilder:printcolumn:name="Queued",type=integer,JSONPath=`.status.createsQueued`,description="Machines waiting for a create slot of the class"
// +kubebuilder:printcolumn:name="Deleting",type=integer,JSONPath=`.status.deletesInFlight`,priority=1,description="DeleteMachine calls in flight"
// +kubebuilder:printcolumn:name="Deletes Queued",type=integer,JSONPath=`.status.deletesQueued`,priority=1,description="Machines waiting for a delete slot of the class"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the class's description of VMs.
	Spec MachineClassSpec `json:"spec"`

	// Status is what the manager observed of the class.
	// +optional
	Status MachineClassStatus `json:"status,omitempty"`
}

// MachineClassList is a list of MachineClasses.
//
// +kubebuilder:object:root=true
type MachineClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineClass `json:"items"`
}
