package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SpreadPolicy is how a MachineDeployment shares its replicas among its
// failure domains.
// +kubebuilder:validation:Enum=Even;Weighted
type SpreadPolicy string

// Spread policies.
const (
	// SpreadEven gives every zone the same share, within one Machine.
	SpreadEven SpreadPolicy = "Even"
	// SpreadWeighted gives each zone a share in proportion to its weight.
	SpreadWeighted SpreadPolicy = "Weighted"
)

// FailureDomains spreads a MachineDeployment's Machines over zones
// (docs/failure-domains.md): every Machine is placed in one of them
// (spec.failureDomain), the zones are kept within one Machine of their
// share during scaling and rollouts, and a zone out of capacity gives its
// share to the others until it has capacity again.
// +kubebuilder:validation:XValidation:rule="self.policy == 'Weighted' || !has(self.zones) || self.zones.all(z, !has(z.weight))",message="failureDomains.zones[].weight is only read under policy Weighted: remove the weights or set policy: Weighted"
type FailureDomains struct {
	// Zones to spread over. Empty: the zones of the template's
	// MachineClass (its nodeTemplate.zones).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Zones []FailureDomainZone `json:"zones,omitempty"`

	// Policy is Even (the default: every zone the same share) or Weighted
	// (shares in proportion to the zones' weights).
	// +optional
	// +kubebuilder:default=Even
	Policy SpreadPolicy `json:"policy,omitempty"`
}

// FailureDomainZone is one zone of a spread.
type FailureDomainZone struct {
	// Name of the zone, as the provider and the Nodes'
	// topology.kubernetes.io/zone label know it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.labelValue().validate(self).hasValue()",message="failureDomains.zones[].name must be a valid label value (it becomes the Node's topology.kubernetes.io/zone): at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Name string `json:"name"`

	// Weight of the zone under policy Weighted (default 1). A zone of
	// weight 0 gets Machines only while every other zone is out of
	// capacity.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Weight *int32 `json:"weight,omitempty"`
}

// FailureDomainPlacement is a MachineSet's placement over zones, resolved
// by its MachineDeployment from spec.failureDomains and what it has seen
// of each zone's capacity (docs/failure-domains.md). The set places each
// new Machine in the zone furthest below its share, counting every
// Machine of the deployment, and removes Machines from the zone furthest
// above its share first.
type FailureDomainPlacement struct {
	// Zones with their resolved weights and capacity.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Zones []PlacementZone `json:"zones"`

	// RebalanceSurge is how many Machines the set may create above
	// spec.replicas to move Machines back into a zone below its share (0
	// or 1; the deployment gives 1 to its newest set when maxSurge
	// allows it and no rollout is in progress).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	RebalanceSurge int32 `json:"rebalanceSurge,omitempty"`
}

// PlacementZone is one zone of a MachineSet's placement.
type PlacementZone struct {
	// Name of the zone.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Weight of the zone's share (Even gives every zone 1).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Weight int32 `json:"weight"`

	// OutOfCapacity: the provider refused a create there for lack of
	// capacity; no Machine is placed there, and a Machine waiting for a
	// VM there is replaced in another zone.
	// +optional
	OutOfCapacity bool `json:"outOfCapacity,omitempty"`
}

// FailureDomainStatus is what a MachineDeployment observed of one zone.
type FailureDomainStatus struct {
	// Name of the zone.
	Name string `json:"name"`

	// Machines is how many of the deployment's Machines not being
	// deleted are placed in the zone.
	Machines int32 `json:"machines"`

	// Target is the zone's share of spec.replicas under the policy, with
	// the shares of zones out of capacity moved to the others.
	Target int32 `json:"target"`

	// OutOfCapacitySince is when a create in the zone was first answered
	// ResourceExhausted; absent while the zone has capacity.
	// +optional
	OutOfCapacitySince *metav1.Time `json:"outOfCapacitySince,omitempty"`

	// NextProbe is when a create is tried in the zone again (a backoff
	// that doubles with every failed probe).
	// +optional
	NextProbe *metav1.Time `json:"nextProbe,omitempty"`

	// FailedProbes counts the probes refused for capacity in a row.
	// +optional
	FailedProbes int32 `json:"failedProbes,omitempty"`
}

// SpreadCondition is a MachineDeployment's condition about its failure
// domains: True while every zone is within one Machine of its share.
const SpreadCondition = "Spread"

// Reasons of SpreadCondition.
const (
	// SpreadBalancedReason: every zone is within one Machine of its share.
	SpreadBalancedReason = "Balanced"
	// SpreadRebalancingReason: a zone is more than one Machine from its
	// share (scaling, a rollout, a zone just back) and Machines are on
	// their way.
	SpreadRebalancingReason = "Rebalancing"
	// ZoneOutOfCapacityReason: a zone is out of capacity and its share
	// was moved to the others.
	ZoneOutOfCapacityReason = "ZoneOutOfCapacity"
	// ZonesInvalidReason: the failure domains cannot be resolved (no
	// zones listed and the class lists none, or a zone the class cannot
	// create in).
	ZonesInvalidReason = "ZonesInvalid"
)
