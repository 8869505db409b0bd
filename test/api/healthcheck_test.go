package api_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const validHealthCheck = `
apiVersion: machine.millwright.dev/v1alpha1
kind: MachineHealthCheck
spec:
  selector:
    matchLabels: {pool: a}
  checks:
    nodeStartupTimeout: 10m
    unhealthyNodeConditions:
    - {type: Ready, status: "False", timeout: 5m}
    - {type: Ready, status: Unknown, timeout: 5m}
    unhealthyMachineConditions:
    - {type: NodeHealthy, status: "False", timeout: 0s}
  remediation:
    triggerIf: {unhealthyLessThanOrEqualTo: 40%}
    maxInFlight: 2
`

// TestInvalidHealthChecksAreRefused: the bad input of issue 14 is refused
// at admission, with a message naming the field.
func TestInvalidHealthChecksAreRefused(t *testing.T) {
	nodeCondition := func(field string, v any) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			c := map[string]any{"type": "Ready", "status": "False", "timeout": "5m"}
			c[field] = v
			set(u, []any{c}, "spec", "checks", "unhealthyNodeConditions")
		}
	}
	cases := []invalidCase{
		{"empty selector", validHealthCheck,
			func(u *unstructured.Unstructured) { set(u, map[string]any{}, "spec", "selector") },
			"spec.selector must not be empty"},
		{"percent over 100", validHealthCheck,
			func(u *unstructured.Unstructured) {
				set(u, "140%", "spec", "remediation", "triggerIf", "unhealthyLessThanOrEqualTo")
			},
			"unhealthyLessThanOrEqualTo must be a non-negative number or a percentage from 0% to 100%"},
		{"negative unhealthy count", validHealthCheck,
			func(u *unstructured.Unstructured) {
				set(u, -1, "spec", "remediation", "triggerIf", "unhealthyLessThanOrEqualTo")
			},
			"unhealthyLessThanOrEqualTo must be a non-negative number"},
		{"maxInFlight as a word", validHealthCheck,
			func(u *unstructured.Unstructured) { set(u, "two", "spec", "remediation", "maxInFlight") },
			"maxInFlight must be a non-negative number or a percentage"},
		{"negative node condition timeout", validHealthCheck, nodeCondition("timeout", "-5m"),
			"timeout must be a non-negative duration"},
		{"node condition timeout that is not a duration", validHealthCheck, nodeCondition("timeout", "five minutes"),
			"timeout must be a non-negative duration"},
		{"node condition status that is not a status", validHealthCheck, nodeCondition("status", "Maybe"),
			"Unsupported value"},
		{"negative machine condition timeout", validHealthCheck,
			func(u *unstructured.Unstructured) {
				set(u, []any{map[string]any{"type": "Ready", "status": "False", "timeout": "-1s"}}, "spec", "checks", "unhealthyMachineConditions")
			},
			"timeout must be a non-negative duration"},
		{"negative node startup timeout", validHealthCheck,
			func(u *unstructured.Unstructured) { set(u, "-10m", "spec", "checks", "nodeStartupTimeout") },
			"nodeStartupTimeout must be a non-negative duration"},
		{"malformed range", validHealthCheck,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"unhealthyInRange": "3-5"}, "spec", "remediation", "triggerIf")
			},
			`unhealthyInRange must be "[min-max]"`},
		{"range upside down", validHealthCheck,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"unhealthyInRange": "[5-3]"}, "spec", "remediation", "triggerIf")
			},
			"with min <= max"},
		{"both triggers", validHealthCheck,
			func(u *unstructured.Unstructured) {
				set(u, "[3-5]", "spec", "remediation", "triggerIf", "unhealthyInRange")
			},
			"set at most one of unhealthyLessThanOrEqualTo and unhealthyInRange"},
		{"template kind without the Template suffix", validHealthCheck,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"apiVersion": "remediation.example.com/v1", "kind": "RebootRemediation", "name": "reboot"}, "spec", "remediation", "templateRef")
			},
			"templateRef.kind must end in Template"},
		{"duplicate node condition", validHealthCheck,
			func(u *unstructured.Unstructured) {
				c := map[string]any{"type": "Ready", "status": "False", "timeout": "5m"}
				set(u, []any{c, c}, "spec", "checks", "unhealthyNodeConditions")
			},
			"Duplicate value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, tc.base)
			tc.mutate(u)
			expectRefused(t, create(t, u), tc.want)
		})
	}
}

// TestValidHealthChecksAreAccepted: the boundaries are accepted.
func TestValidHealthChecksAreAccepted(t *testing.T) {
	for name, mutate := range map[string]func(u *unstructured.Unstructured){
		"as written": func(*unstructured.Unstructured) {},
		"100 percent": func(u *unstructured.Unstructured) {
			set(u, "100%", "spec", "remediation", "triggerIf", "unhealthyLessThanOrEqualTo")
		},
		"a range": func(u *unstructured.Unstructured) {
			set(u, map[string]any{"unhealthyInRange": "[3-5]"}, "spec", "remediation", "triggerIf")
		},
		"zero startup timeout": func(u *unstructured.Unstructured) { set(u, "0s", "spec", "checks", "nodeStartupTimeout") },
		"percent in flight":    func(u *unstructured.Unstructured) { set(u, "25%", "spec", "remediation", "maxInFlight") },
	} {
		t.Run(name, func(t *testing.T) {
			u := object(t, validHealthCheck)
			mutate(u)
			if err := create(t, u); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}
