package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// LabelSelector selects Machines by their labels. It has the shape of a
// Kubernetes label selector; the limits Kubernetes puts on labels are
// written into the schema so that the API server can check, cheaply and at
// admission, that a selector matches its template.
type LabelSelector struct {
	// MatchLabels selects objects whose label at each key has exactly the
	// value given. At most 16 entries: the API server checks each against the
	// template's labels, and that check must stay within its cost budget.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// MatchExpressions are further requirements, all of which must hold.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a LabelSelector.
type LabelSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`

	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`

	// Values for In and NotIn; empty for Exists and DoesNotExist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`
}

// AsMetav1 returns the selector as a Kubernetes label selector.
func (s *LabelSelector) AsMetav1() *metav1.LabelSelector {
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: r.Operator, Values: r.Values,
		})
	}
	return out
}

// AsSelector returns the selector as a labels.Selector for listing and matching.
func (s *LabelSelector) AsSelector() (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s.AsMetav1())
}
