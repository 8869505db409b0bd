package machinedeployment

import (
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestCheckBounds(t *testing.T) {
	const lo, hi = v1alpha1.AutoscalerMinSizeAnnotation, v1alpha1.AutoscalerMaxSizeAnnotation
	tests := []struct {
		name        string
		annotations map[string]string
		set         bool
		problem     string // a substring; "" means valid
	}{
		{"neither", map[string]string{"other": "1"}, false, ""},
		{"both valid", map[string]string{lo: "1", hi: "5"}, true, ""},
		{"equal", map[string]string{lo: "3", hi: "3"}, true, ""},
		{"zero to n", map[string]string{lo: "0", hi: "5"}, true, ""},
		{"only max", map[string]string{hi: "4"}, true, ""},
		{"only min 0", map[string]string{lo: "0"}, true, ""},
		{"only min above 0", map[string]string{lo: "2"}, true, "is missing"},
		{"max below min", map[string]string{lo: "5", hi: "2"}, true, "max-size 2 is below min-size 5"},
		{"negative", map[string]string{lo: "-1", hi: "2"}, true, "non-negative integer"},
		{"not a number", map[string]string{lo: "1", hi: "ten"}, true, `is "ten"`},
		{"too large", map[string]string{hi: "99999999999"}, true, "non-negative integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, problem := checkBounds(tc.annotations)
			if set != tc.set {
				t.Errorf("set = %v, want %v", set, tc.set)
			}
			if (problem == "") != (tc.problem == "") || !strings.Contains(problem, tc.problem) {
				t.Errorf("problem = %q, want one containing %q", problem, tc.problem)
			}
		})
	}
}
