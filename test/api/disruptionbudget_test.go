package api_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const validDisruptionBudget = `
apiVersion: machine.millwright.dev/v1alpha1
kind: MachineDisruptionBudget
spec:
  selector:
    matchLabels: {cluster: prod}
  maxUnavailable: 2
`

// TestInvalidDisruptionBudgetsAreRefused: the bad input of issue 17 item 3
// is refused at admission, with a message naming the field.
func TestInvalidDisruptionBudgetsAreRefused(t *testing.T) {
	maxUnavailable := func(v any) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { set(u, v, "spec", "maxUnavailable") }
	}
	cases := []invalidCase{
		{"empty selector", validDisruptionBudget,
			func(u *unstructured.Unstructured) { set(u, map[string]any{}, "spec", "selector") },
			"spec.selector must not be empty"},
		{"no selector", validDisruptionBudget,
			func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "selector") },
			"spec.selector: Required value"},
		{"no maxUnavailable", validDisruptionBudget,
			func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "maxUnavailable") },
			"spec.maxUnavailable: Required value"},
		{"negative maxUnavailable", validDisruptionBudget, maxUnavailable(-1),
			"maxUnavailable must be a non-negative number or a percentage from 0% to 100%"},
		{"percent over 100", validDisruptionBudget, maxUnavailable("101%"),
			"maxUnavailable must be a non-negative number or a percentage from 0% to 100%"},
		{"negative percent", validDisruptionBudget, maxUnavailable("-5%"),
			"maxUnavailable must be a non-negative number or a percentage from 0% to 100%"},
		{"a word", validDisruptionBudget, maxUnavailable("two"),
			"maxUnavailable must be a non-negative number or a percentage from 0% to 100%"},
		{"a fraction", validDisruptionBudget, maxUnavailable("1.5"),
			"maxUnavailable must be a non-negative number or a percentage from 0% to 100%"},
		{"selector with an invalid label key", validDisruptionBudget,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"matchLabels": map[string]any{"not a key": "x"}}, "spec", "selector")
			},
			"matchLabels keys must be valid label keys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, tc.base)
			tc.mutate(u)
			expectRefused(t, create(t, u), tc.want)
		})
	}
}

// TestValidDisruptionBudgetsAreAccepted: the boundaries are accepted.
func TestValidDisruptionBudgetsAreAccepted(t *testing.T) {
	for name, mutate := range map[string]func(u *unstructured.Unstructured){
		"as written":     func(*unstructured.Unstructured) {},
		"zero, a freeze": func(u *unstructured.Unstructured) { set(u, 0, "spec", "maxUnavailable") },
		"0 percent":      func(u *unstructured.Unstructured) { set(u, "0%", "spec", "maxUnavailable") },
		"100 percent":    func(u *unstructured.Unstructured) { set(u, "100%", "spec", "maxUnavailable") },
		"25 percent":     func(u *unstructured.Unstructured) { set(u, "25%", "spec", "maxUnavailable") },
		"expressions only": func(u *unstructured.Unstructured) {
			set(u, map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"a", "b"}}}}, "spec", "selector")
		},
	} {
		t.Run(name, func(t *testing.T) {
			u := object(t, validDisruptionBudget)
			mutate(u)
			if err := create(t, u); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}
