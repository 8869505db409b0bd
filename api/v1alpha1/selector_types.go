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
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="matchLabels keys must be valid label keys: an optional DNS subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="matchLabels values must be valid label values: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// MatchExpressions are further requirements, all of which must hold.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a LabelSelector.
//
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",message="matchExpressions values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist"
type LabelSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="matchExpressions key must be a valid label key: an optional DNS subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.'"
	Key string `json:"key"`

	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`

	// Values for In and NotIn; empty for Exists and DoesNotExist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(v, !format.labelValue().validate(v).hasValue())",message="matchExpressions values must be valid label values: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
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
