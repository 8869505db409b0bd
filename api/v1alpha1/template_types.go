package v1alpha1

// MachineTemplateSpec describes the Machines a MachineSet or
// MachineDeployment creates.
//
// +kubebuilder:validation:XValidation:rule="!has(self.spec.providerID)",message="spec.template.spec.providerID must not be set: every Machine gets its own VM and its own providerID"
type MachineTemplateSpec struct {
	// Metadata holds the labels and annotations of the created Machines.
	// The labels must match the selector.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`

	// Spec of the created Machines.
	Spec MachineSpec `json:"spec"`
}

// MachineDeletePolicy picks which Machines a MachineSet removes first when
// it scales down, once annotations, priority and phase have not decided.
// +kubebuilder:validation:Enum=Random;Newest;Oldest
type MachineDeletePolicy string

// The delete policies of a MachineSet.
const (
	// DeletePolicyRandom removes Machines in no particular order.
	DeletePolicyRandom MachineDeletePolicy = "Random"
	// DeletePolicyNewest removes the most recently created Machines first.
	DeletePolicyNewest MachineDeletePolicy = "Newest"
	// DeletePolicyOldest removes the least recently created Machines first.
	DeletePolicyOldest MachineDeletePolicy = "Oldest"
)

// Condition types of MachineSets and MachineDeployments.
const (
	// ReplicaFailureCondition: a MachineSet failed to create or delete a Machine; the reason says why.
	ReplicaFailureCondition = "ReplicaFailure"
	// AvailableCondition: at least replicas − maxUnavailable Machines are available.
	AvailableCondition = "Available"
	// ProgressingCondition: a rollout is progressing, finished, or stuck past its deadline.
	ProgressingCondition = "Progressing"
	// FrozenCondition: the safety controller froze scale-up because too many Machines exist.
	FrozenCondition = "Frozen"
	// AutoscalerBoundsCondition: the autoscaler min/max-size annotations are valid.
	AutoscalerBoundsCondition = "AutoscalerBoundsValid"
)
