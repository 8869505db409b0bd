package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MachineDisruptionBudgetSpec selects Machines and bounds how many of them
// may be unavailable before Millwright holds its own (voluntary)
// disruptions back (docs/disruption-budgets.md).
//
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="spec.selector must not be empty: an empty selector would bound every Machine of the namespace as one pool; select the pool with labels"
type MachineDisruptionBudgetSpec struct {
	// Selector picks the Machines the budget bounds, whatever MachineSet or
	// MachineDeployment they belong to. Machines selected by several
	// budgets are disrupted only when every one of them allows it.
	Selector LabelSelector `json:"selector"`

	// MaxUnavailable is how many of the selected Machines may be
	// unavailable at once: a number, or a percentage of the selected
	// Machines not being deleted (rounded up). Voluntary disruptions wait
	// while it is reached; failures count but are never held back. 0 holds
	// every voluntary disruption back (a maintenance freeze).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxUnavailable must be a non-negative number or a percentage from 0% to 100%"
	MaxUnavailable intstr.IntOrString `json:"maxUnavailable"`
}

// DisruptionKind is which of Millwright's voluntary disruptions a Machine
// is granted or waits for.
// +kubebuilder:validation:Enum=Rollout;ScaleDown;InPlaceUpdate;Remediation;PreservationEnd
type DisruptionKind string

// The voluntary disruptions a budget bounds.
const (
	// DisruptionRollout: a rollout deletes an old Machine.
	DisruptionRollout DisruptionKind = "Rollout"
	// DisruptionScaleDown: a scale-down deletes (and drains) a Machine.
	DisruptionScaleDown DisruptionKind = "ScaleDown"
	// DisruptionInPlaceUpdate: an in-place update drains and updates a Machine.
	DisruptionInPlaceUpdate DisruptionKind = "InPlaceUpdate"
	// DisruptionRemediation: a health check has a Machine replaced.
	DisruptionRemediation DisruptionKind = "Remediation"
	// DisruptionPreservationEnd: a preserved Machine is deleted as its preservation ends.
	DisruptionPreservationEnd DisruptionKind = "PreservationEnd"
)

// DisruptedMachine is a disruption the budget granted and has not yet seen
// take effect (the Machine not yet showing the disruption of its kind:
// being deleted, marked for remediation, updating in place): it counts as
// unavailable meanwhile, so that a grant is never given twice.
type DisruptedMachine struct {
	// Name of the Machine.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Kind of the disruption granted.
	Kind DisruptionKind `json:"kind"`

	// GrantedAt is when the grant was recorded; a grant not seen taking
	// effect within two minutes lapses.
	GrantedAt metav1.Time `json:"grantedAt"`
}

// WaitingMachine is a selected Machine whose voluntary disruption waits for
// this budget (or another budget also selecting it).
type WaitingMachine struct {
	// Name of the Machine.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Message is the Machine's DisruptionAllowed condition: what it waits
	// for and which budget holds it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// MachineDisruptionBudgetStatus is what the budget controller observed and
// the disruptions granted.
type MachineDisruptionBudgetStatus struct {
	// ObservedGeneration is the generation of the budget the counts were
	// computed for; no disruption is granted while it lags the
	// generation.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ExpectedMachines is how many selected Machines there should be: the
	// spec.replicas of the owners whose Machines the budget selects
	// wholly, plus the other selected Machines not being deleted
	// (docs/disruption-budgets.md). The base of a percentage.
	// +optional
	ExpectedMachines int32 `json:"expectedMachines"`

	// MaxUnavailable is spec.maxUnavailable resolved against expectedMachines.
	// +optional
	MaxUnavailable int32 `json:"maxUnavailable"`

	// CurrentUnavailable is the number of expected Machines unavailable
	// or missing now (docs/disruption-budgets.md says which), grants not
	// yet taken effect included.
	// +optional
	CurrentUnavailable int32 `json:"currentUnavailable"`

	// DisruptionsAllowed is how many more voluntary disruptions may be
	// granted now. A grant lowers it at once, under the budget's
	// resourceVersion, before the disruption starts.
	// +optional
	DisruptionsAllowed int32 `json:"disruptionsAllowed"`

	// DisruptedMachines are the grants not yet seen taking effect.
	// +optional
	// +listType=map
	// +listMapKey=name
	DisruptedMachines []DisruptedMachine `json:"disruptedMachines,omitempty"`

	// WaitingMachines are the selected Machines whose voluntary disruption
	// waits (their DisruptionAllowed condition is False).
	// +optional
	// +listType=map
	// +listMapKey=name
	WaitingMachines []WaitingMachine `json:"waitingMachines,omitempty"`

	// Conditions: DisruptionAllowed, Overlapping.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of a MachineDisruptionBudget (DisruptionAllowedCondition
// is also set on Machines).
const (
	// DisruptionAllowedCondition, on a budget: True while it grants
	// disruptions; False with a reason saying why not (BudgetExhausted,
	// NoMachinesSelected, InvalidSpec). On a Machine: False while one of
	// its voluntary disruptions waits for a budget; absent otherwise.
	DisruptionAllowedCondition = "DisruptionAllowed"
	// OverlappingCondition, on a budget: True while some of its Machines
	// are also selected by other budgets (each must allow their disruption).
	OverlappingCondition = "Overlapping"
)

// MachineDisruptionBudget bounds how many of the Machines it selects may
// be unavailable while Millwright disrupts them voluntarily: rollouts,
// scale-downs, in-place updates, health check remediations and the end of
// preservations ask it first, across every MachineDeployment, and wait
// while it is reached. Failures count but are never held back.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mdb,categories=millwright
// +kubebuilder:printcolumn:name="Max-Unavailable",type=string,JSONPath=`.spec.maxUnavailable`
// +kubebuilder:printcolumn:name="Expected",type=integer,JSONPath=`.status.expectedMachines`
// +kubebuilder:printcolumn:name="Unavailable",type=integer,JSONPath=`.status.currentUnavailable`
// +kubebuilder:printcolumn:name="Allowed",type=integer,JSONPath=`.status.disruptionsAllowed`,description="voluntary disruptions allowed now"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineDisruptionBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the budget selects and bounds.
	Spec MachineDisruptionBudgetSpec `json:"spec"`

	// Status is what the budget controller observed and the disruptions granted.
	// +optional
	Status MachineDisruptionBudgetStatus `json:"status,omitempty"`
}

// MachineDisruptionBudgetList is a list of MachineDisruptionBudgets.
//
// +kubebuilder:object:root=true
type MachineDisruptionBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineDisruptionBudget `json:"items"`
}
