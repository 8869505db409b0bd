package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MachineDeploymentSpec is the desired state of a MachineDeployment.
//
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="spec.selector must not be empty: an empty selector would select every Machine in the namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchLabels) || (has(self.template.metadata) && has(self.template.metadata.labels) && self.selector.matchLabels.all(k, k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k]))",message="spec.selector.matchLabels does not match spec.template.metadata.labels: the MachineDeployment would not find the Machines it creates"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator == 'In' ? (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels && has(e.values) && self.template.metadata.labels[e.key] in e.values) : e.operator == 'NotIn' ? (!has(self.template.metadata) || !has(self.template.metadata.labels) || !(e.key in self.template.metadata.labels) || !has(e.values) || !(self.template.metadata.labels[e.key] in e.values)) : e.operator == 'Exists' ? (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : (!has(self.template.metadata) || !has(self.template.metadata.labels) || !(e.key in self.template.metadata.labels)))",message="spec.selector.matchExpressions do not match spec.template.metadata.labels: the MachineDeployment would not find the Machines it creates"
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadlineSeconds) || !has(self.minReadySeconds) || self.progressDeadlineSeconds > self.minReadySeconds",message="spec.progressDeadlineSeconds must be greater than spec.minReadySeconds"
type MachineDeploymentSpec struct {
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

	// Selector picks the Machines and MachineSets of this deployment. It must
	// match the template's labels and must not be empty.
	Selector LabelSelector `json:"selector"`

	// Template describes the Machines to create. Changing it rolls the
	// deployment out to new Machines according to the strategy.
	Template MachineTemplateSpec `json:"template"`

	// Strategy says how old Machines are replaced by new ones when the
	// template changes. Defaults to RollingUpdate with maxSurge 1 and
	// maxUnavailable 0.
	// +optional
	// +kubebuilder:default={type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
	Strategy MachineDeploymentStrategy `json:"strategy,omitempty"`

	// MinReadySeconds is how long a new Machine must be Running before it
	// counts as available (and the rollout moves on).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// RevisionHistoryLimit is how many old, empty MachineSets are kept to
	// allow a rollback. Defaults to 10.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Paused stops rollouts: template changes are not rolled out until it is
	// false again. The deployment's Machines are not reconciled either, as
	// with the machine.millwright.dev/paused annotation on one Machine (their
	// Paused condition says so): scaling changes the Machine objects, but new
	// ones are provisioned and removed ones drained only after resuming.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// RolloutAfter replaces every Machine once this time has passed: a set
	// created before it no longer counts as the template's current set, so
	// the strategy rolls out a new set of the same template, as after a
	// template change. `kubectl millwright rollout restart` sets it to now.
	// A later time asks for another rollout; a time in the future starts
	// the rollout when it comes (docs/rollout.md, "Replacing every Machine").
	// +optional
	RolloutAfter *metav1.Time `json:"rolloutAfter,omitempty"`

	// RollbackTo asks the controller to roll back to an earlier revision; it
	// is cleared once the rollback has started.
	// +optional
	RollbackTo *RollbackConfig `json:"rollbackTo,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may go without progress
	// before the Progressing condition turns False with reason
	// ProgressDeadlineExceeded. The rollout itself continues. Defaults to 600.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// MaxConcurrentReplacements limits how many unhealthy Machines of this
	// deployment may be declared Failed and replaced at once (meltdown
	// protection). Default: the manager's --max-concurrent-replacements (1).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxConcurrentReplacements *int32 `json:"maxConcurrentReplacements,omitempty"`

	// AutoPreserveFailedMax is how many failed Machines are kept
	// automatically, for debugging, instead of being replaced at once
	// (docs/preservation.md): each keeps its VM and cordoned Node until the
	// preserve timeout, and its replacement is created all the same. Not
	// while a rollout is in progress. Default 0: none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AutoPreserveFailedMax *int32 `json:"autoPreserveFailedMax,omitempty"`

	// FailureDomains spreads the Machines over zones, keeps them spread
	// during scaling and rollouts, and moves a zone's share to the others
	// while it is out of capacity (docs/failure-domains.md). Changing it
	// replaces no Machine: new Machines go where the spread needs them.
	// +optional
	FailureDomains *FailureDomains `json:"failureDomains,omitempty"`
}

// MachineDeploymentStrategyType is how a MachineDeployment replaces Machines.
// +kubebuilder:validation:Enum=RollingUpdate;Recreate;OnDelete;InPlace
type MachineDeploymentStrategyType string

// The strategies of a MachineDeployment.
const (
	// RollingUpdateStrategy replaces Machines gradually, within maxSurge and maxUnavailable.
	RollingUpdateStrategy MachineDeploymentStrategyType = "RollingUpdate"
	// RecreateStrategy removes every old Machine before creating new ones.
	RecreateStrategy MachineDeploymentStrategyType = "Recreate"
	// OnDeleteStrategy creates new Machines only in place of Machines a user deletes.
	OnDeleteStrategy MachineDeploymentStrategyType = "OnDelete"
	// InPlaceStrategy updates the existing Machines without replacing them
	// (docs/in-place-updates.md); a Machine whose change its driver cannot
	// apply in place is replaced as in RollingUpdate.
	InPlaceStrategy MachineDeploymentStrategyType = "InPlace"
)

// MachineDeploymentStrategy says how old Machines are replaced by new ones.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'RollingUpdate' || !has(self.rollingUpdate)",message="spec.strategy.rollingUpdate may only be set when spec.strategy.type is RollingUpdate"
// +kubebuilder:validation:XValidation:rule="self.type == 'InPlace' || !has(self.inPlace)",message="spec.strategy.inPlace may only be set when spec.strategy.type is InPlace"
type MachineDeploymentStrategy struct {
	// Type is RollingUpdate (the default), Recreate, OnDelete or InPlace.
	// +optional
	// +kubebuilder:default=RollingUpdate
	Type MachineDeploymentStrategyType `json:"type,omitempty"`

	// RollingUpdate bounds a rolling update. Only with type RollingUpdate.
	// +optional
	RollingUpdate *RollingUpdateMachineDeployment `json:"rollingUpdate,omitempty"`

	// InPlace bounds an in-place update. Only with type InPlace.
	// +optional
	InPlace *InPlaceMachineDeployment `json:"inPlace,omitempty"`
}

// InPlaceOrchestration says who picks the Machines an in-place update
// changes next.
// +kubebuilder:validation:Enum=Auto;Manual
type InPlaceOrchestration string

// The orchestrations of an in-place update.
const (
	// InPlaceAuto: the MachineDeployment controller picks Machines, up to maxUnavailable at a time.
	InPlaceAuto InPlaceOrchestration = "Auto"
	// InPlaceManual: only Machines a person selected (UpdateSelectedLabel on
	// the Machine or its Node) are updated, still up to maxUnavailable at a time.
	InPlaceManual InPlaceOrchestration = "Manual"
)

// InPlaceMachineDeployment bounds an in-place update.
type InPlaceMachineDeployment struct {
	// Orchestration is Auto (the default) or Manual.
	// +optional
	// +kubebuilder:default=Auto
	Orchestration InPlaceOrchestration `json:"orchestration,omitempty"`

	// MaxUnavailable is how many Machines may be cordoned, draining or
	// updating at once (together with those unavailable for other
	// reasons): an absolute number (1) or a percentage of replicas (10%,
	// rounded down, at least 1). Defaults to 1; cannot be 0.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 && self <= 2147483647 : self.matches('^0*(100|[1-9][0-9]?)%$')",message="spec.strategy.inPlace.maxUnavailable must be a positive integer (1) or a percentage from 1% to 100% (10%): with 0 no Machine could ever be updated"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// UpdateTimeout is how long one Machine's update (drain, apply, the
	// Node back Ready at the new version) may take before it counts as
	// failed. Defaults to 20m.
	// +optional
	// +kubebuilder:default="20m"
	UpdateTimeout *metav1.Duration `json:"updateTimeout,omitempty"`

	// MaxFailed is how many failed in-place updates the rollout tolerates:
	// once more Machines than this have failed, no further Machine is
	// started and the Progressing condition says why. Defaults to 0: the
	// first failure stops the rollout.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	MaxFailed *int32 `json:"maxFailed,omitempty"`
}

// RollingUpdateMachineDeployment bounds a rolling update.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.maxSurge) && has(self.maxUnavailable) && string(self.maxSurge).matches('^0+%?$') && string(self.maxUnavailable).matches('^0+%?$'))",message="spec.strategy.rollingUpdate.maxSurge and maxUnavailable cannot both be zero: the rollout could never replace a Machine"
type RollingUpdateMachineDeployment struct {
	// MaxUnavailable is how many Machines may be unavailable during the
	// update, below replicas: an absolute number (5) or a percentage of
	// replicas (10%, rounded down). Defaults to 0. Cannot be 0 if maxSurge is 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : self.matches('^0*(100|[1-9]?[0-9])%$')",message="spec.strategy.rollingUpdate.maxUnavailable must be a non-negative integer (5) or a percentage from 0% to 100% (10%)"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many Machines may exist above replicas during the
	// update: an absolute number (5) or a percentage of replicas (10%,
	// rounded up). Defaults to 1. Cannot be 0 if maxUnavailable is 0.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : self.matches('^[0-9]{1,9}%$')",message="spec.strategy.rollingUpdate.maxSurge must be a non-negative integer (5) or a percentage (10%)"
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// ReplacementPolicy says how long a Machine being deleted counts against
	// maxSurge. TerminationComplete (the default): until the Machine object
	// is gone (drained, its VM and Node deleted), so at most
	// replicas + maxSurge Machines ever exist. TerminationStarted: only
	// until its deletion starts, as Kubernetes' podReplacementPolicy; the
	// rollout moves faster, but for a while up to replicas + maxSurge + the
	// Machines being deleted may exist (and be paid for). See
	// docs/rollout.md.
	// +optional
	// +kubebuilder:default=TerminationComplete
	ReplacementPolicy ReplacementPolicy `json:"replacementPolicy,omitempty"`
}

// ReplacementPolicy is when a Machine being deleted stops counting against
// a rolling update's maxSurge.
// +kubebuilder:validation:Enum=TerminationComplete;TerminationStarted
type ReplacementPolicy string

// The replacement policies of a rolling update.
const (
	// TerminationComplete counts a Machine being deleted until its object is gone.
	TerminationComplete ReplacementPolicy = "TerminationComplete"
	// TerminationStarted stops counting a Machine once its deletion starts.
	TerminationStarted ReplacementPolicy = "TerminationStarted"
)

// RollbackConfig names the revision to roll back to.
type RollbackConfig struct {
	// Revision to roll back to; 0 means the previous revision.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Revision int64 `json:"revision,omitempty"`
}

// MachineDeploymentStatus is what the MachineDeployment controller observed.
type MachineDeploymentStatus struct {
	// ObservedGeneration is the generation of the deployment last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of Machines of all its MachineSets, not
	// counting preserved ones (preservedReplicas).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is the number of Machines made from the current template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ReadyReplicas is the number of Machines that are Running.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of Machines Running for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// PreservedReplicas is the number of its Machines kept by preservation
	// (docs/preservation.md), counted in none of the other counts.
	// +optional
	PreservedReplicas int32 `json:"preservedReplicas,omitempty"`

	// UnavailableReplicas is how many more available Machines are needed to
	// reach replicas: Machines not yet available or not yet created.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// Selector is spec.selector as a string, for the /scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Conditions: Available, Progressing, Frozen, AutoscalerBoundsValid, Spread.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CollisionCount counts template-hash collisions; it is mixed into the
	// hash that names the newest MachineSet.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// FailedMachines lists Machines of this deployment whose last operation failed.
	// +optional
	// +listType=atomic
	FailedMachines []MachineSummary `json:"failedMachines,omitempty"`

	// FailureDomains is, per zone of spec.failureDomains, how many
	// Machines are there, the zone's share, and its capacity.
	// +optional
	// +listType=map
	// +listMapKey=name
	FailureDomains []FailureDomainStatus `json:"failureDomains,omitempty"`
}

// MachineDeployment rolls a fleet of Machines from one template to the next
// without going below what the user allowed, like a Deployment does pods.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=mcd,categories=millwright
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a MachineDeployment's name is at most 63 characters: it is the value of its Machines' machine.millwright.dev/deployment-name label"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the MachineDeployment.
	Spec MachineDeploymentSpec `json:"spec"`

	// Status is what the MachineDeployment controller observed.
	// +optional
	Status MachineDeploymentStatus `json:"status,omitempty"`
}

// MachineDeploymentList is a list of MachineDeployments.
//
// +kubebuilder:object:root=true
type MachineDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineDeployment `json:"items"`
}
