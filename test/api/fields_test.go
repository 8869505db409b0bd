package api_test

import (
	"strings"
	"testing"
)

// What Millwright writes to a Node (labels, annotations, taints), puts in a
// selector, names (Secrets, classes, references) or uses in rollout
// arithmetic is checked at admission with the rules the core API applies
// to the same fields, so a bad value is refused when applied instead of
// failing later in a controller. Each field has its bad values refused
// with a message naming the field, and its boundary values accepted.

const (
	validSimTemplate = `
apiVersion: infrastructure.millwright.dev/v1alpha1
kind: SimMachineTemplate
spec:
  template:
    spec:
      providerSpec: {region: local}
`
	validBootstrapTemplate = `
apiVersion: bootstrap.millwright.dev/v1alpha1
kind: TokenBootstrapConfigTemplate
spec:
  template:
    spec: {}
`
)

var (
	// longestLabelKey is a 253-character DNS prefix and a 63-character name.
	longestLabelKey = strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) + "/" + strings.Repeat("n", 63)
	longestValue    = strings.Repeat("v", 63)
)

// fieldCase sets value at path in an object of base; want is "" when the
// API server must accept it, else text the refusal must contain.
type fieldCase struct {
	name  string
	base  string
	path  []string
	value any
	want  string
}

func labelsAt(base string, path ...string) []fieldCase {
	field := strings.Join(path, ".")
	badKey := field + ": Invalid value: labels keys must be valid label keys"
	badValue := field + ": Invalid value: labels values must be valid label values"
	return []fieldCase{
		{field + ": key with a space", base, path, map[string]any{"bad key": "v"}, badKey},
		{field + ": key with an upper-case prefix", base, path, map[string]any{"Example.com/k": "v"}, badKey},
		{field + ": key name over 63 characters", base, path, map[string]any{strings.Repeat("n", 64): "v"}, badKey},
		{field + ": empty key name after the prefix", base, path, map[string]any{"example.com/": "v"}, badKey},
		{field + ": value over 63 characters", base, path, map[string]any{"k": longestValue + "v"}, field + ".k: Too long: may not be more than 63"},
		{field + ": value ending in '-'", base, path, map[string]any{"k": "v-"}, badValue},
		{field + ": longest key and value", base, path, map[string]any{longestLabelKey: longestValue}, ""},
		{field + ": empty value", base, path, map[string]any{"example.com/k": ""}, ""},
	}
}

func taintsAt(base string, path ...string) []fieldCase {
	field := strings.Join(path, ".")
	refused := field + ": Invalid value: taints"
	taint := func(key, value, effect string) map[string]any {
		t := map[string]any{"key": key}
		if value != "" {
			t["value"] = value
		}
		if effect != "" {
			t["effect"] = effect
		}
		return t
	}
	list := func(ts ...map[string]any) []any {
		out := make([]any, len(ts))
		for i, t := range ts {
			out[i] = t
		}
		return out
	}
	return []fieldCase{
		{field + ": an effect the Node API refuses", base, path, list(taint("k", "v", "NoRun")), refused + ": each effect must be NoSchedule, PreferNoSchedule or NoExecute"},
		{field + ": no effect", base, path, list(taint("k", "v", "")), field + "[0].effect: Required value"},
		{field + ": a key that is not a label key", base, path, list(taint("bad key", "", "NoSchedule")), refused + ": each key must be a valid taint key"},
		{field + ": a value that is not a label value", base, path, list(taint("k", "bad value", "NoSchedule")), refused + ": each value must be a valid label value"},
		{field + ": two taints of one key and effect", base, path, list(taint("k", "a", "NoSchedule"), taint("k", "b", "NoSchedule")), refused + " must be unique by key and effect"},
		{field + ": every effect, the longest key and value", base, path,
			list(taint(longestLabelKey, longestValue, "NoSchedule"), taint(longestLabelKey, "", "PreferNoSchedule"), taint("k", "", "NoExecute")), ""},
	}
}

func TestFieldsAreValidatedAsTheCoreAPIDoes(t *testing.T) {
	var cases []fieldCase
	for _, at := range []struct {
		base string
		path []string
	}{
		{validMachine, []string{"spec", "nodeTemplate", "metadata", "labels"}},
		{validSet, []string{"spec", "template", "spec", "nodeTemplate", "metadata", "labels"}},
		{validDeployment, []string{"spec", "template", "spec", "nodeTemplate", "metadata", "labels"}},
		{validClass, []string{"spec", "nodeTemplate", "labels"}},
		{validSimTemplate, []string{"spec", "template", "metadata", "labels"}},
		{validBootstrapTemplate, []string{"spec", "template", "metadata", "labels"}},
	} {
		cases = append(cases, labelsAt(at.base, at.path...)...)
	}
	for _, at := range []struct {
		base string
		path []string
	}{
		{validMachine, []string{"spec", "nodeTemplate", "taints"}},
		{validDeployment, []string{"spec", "template", "spec", "nodeTemplate", "taints"}},
		{validClass, []string{"spec", "nodeTemplate", "taints"}},
	} {
		cases = append(cases, taintsAt(at.base, at.path...)...)
	}
	for _, path := range [][]string{
		{"spec", "nodeTemplate", "metadata", "annotations"},
		{"spec", "template", "metadata", "annotations"},
	} {
		base := validMachine
		if path[1] == "template" {
			base = validSet
		}
		field := strings.Join(path, ".")
		cases = append(cases,
			fieldCase{field + ": key with a space", base, path, map[string]any{"bad key": "v"}, field + ": Invalid value"},
			fieldCase{field + ": key name over 63 characters", base, path, map[string]any{strings.Repeat("n", 64): "v"}, field + ": Invalid value"},
			fieldCase{field + ": over 256 KiB in all", base, path,
				map[string]any{"a": strings.Repeat("x", 200<<10), "b": strings.Repeat("y", 56<<10)}, "annotations may total at most 256 KiB"},
			fieldCase{field + ": 256 KiB in all", base, path,
				map[string]any{"a": strings.Repeat("x", 200<<10), "b": strings.Repeat("y", 56<<10-2)}, ""},
			// The core API checks annotation keys in lower case.
			fieldCase{field + ": upper-case prefix, longest key, any value", base, path,
				map[string]any{"Example.COM/Key": "Any value at all: spaces, ünïcode.", longestLabelKey: ""}, ""},
		)
	}
	ru := []string{"spec", "strategy", "rollingUpdate"}
	mu := append(append([]string{}, ru...), "maxUnavailable")
	ms := append(append([]string{}, ru...), "maxSurge")
	cases = append(cases,
		fieldCase{"maxUnavailable over 100%", validDeployment, mu, "101%", "spec.strategy.rollingUpdate.maxUnavailable must be a non-negative integer (5) or a percentage from 0% to 100%"},
		fieldCase{"maxUnavailable 1000%", validDeployment, mu, "1000%", "maxUnavailable must be"},
		fieldCase{"maxUnavailable over int32", validDeployment, mu, int64(1) << 31, "maxUnavailable must be"},
		fieldCase{"maxUnavailable 100%", validDeployment, mu, "100%", ""},
		fieldCase{"maxUnavailable 0%", validDeployment, mu, "0%", ""},
		fieldCase{"maxSurge 200% (more than 100% is allowed)", validDeployment, ms, "200%", ""},
		fieldCase{"maxSurge of ten digits", validDeployment, ms, "1234567890%", "spec.strategy.rollingUpdate.maxSurge must be"},
		fieldCase{"maxSurge over int32", validDeployment, ms, int64(1) << 31, "maxSurge must be"},
		fieldCase{"maxSurge int32 max", validDeployment, ms, int64(1)<<31 - 1, ""},
		fieldCase{"replacementPolicy TerminationStarted", validDeployment, append(append([]string{}, ru...), "replacementPolicy"), "TerminationStarted", ""},
		fieldCase{"replacementPolicy not one of the two", validDeployment, append(append([]string{}, ru...), "replacementPolicy"), "WhenReady",
			`supported values: "TerminationComplete", "TerminationStarted"`},

		fieldCase{"replicas over int32", validDeployment, []string{"spec", "replicas"}, int64(1) << 31, "spec.replicas"},
		fieldCase{"set replicas over int32", validSet, []string{"spec", "replicas"}, int64(1) << 31, "spec.replicas"},
		fieldCase{"progressDeadlineSeconds over int32", validDeployment, []string{"spec", "progressDeadlineSeconds"}, int64(1) << 31, "spec.progressDeadlineSeconds"},
		fieldCase{"maxEvictRetries over int32", validMachine, []string{"spec", "lifecycle", "maxEvictRetries"}, int64(1) << 31, "spec.lifecycle.maxEvictRetries"},

		fieldCase{"empty bootstrap dataSecretName", validMachine, []string{"spec", "bootstrap", "dataSecretName"}, "", "spec.bootstrap.dataSecretName must be a Secret name"},
		fieldCase{"bootstrap dataSecretName with upper case", validMachine, []string{"spec", "bootstrap", "dataSecretName"}, "Join", "spec.bootstrap.dataSecretName must be a Secret name"},
		fieldCase{"longest bootstrap dataSecretName", validMachine, []string{"spec", "bootstrap", "dataSecretName"}, strings.Repeat("a", 253), ""},
		fieldCase{"class name that is not an object name", validMachine, []string{"spec", "class", "name"}, "Sim_Small", "spec.class.name must be a MachineClass name"},
		fieldCase{"infrastructureRef name that is not an object name", validInfraMachine, []string{"spec", "infrastructureRef", "name"}, "m/1", "spec.infrastructureRef.name: Invalid value"},
		fieldCase{"infrastructureRef apiGroup that is not a group", validInfraMachine, []string{"spec", "infrastructureRef", "apiGroup"}, "Infra Structure", "spec.infrastructureRef.apiGroup: Invalid value"},
		fieldCase{"bootstrap configRef name that is not an object name", validMachine, []string{"spec", "bootstrap", "configRef"},
			map[string]any{"apiGroup": "bootstrap.millwright.dev", "kind": "TokenBootstrapConfig", "name": "-x"}, "spec.bootstrap.configRef.name: Invalid value"},

		fieldCase{"class instanceType that is not a label value", validClass, []string{"spec", "nodeTemplate", "instanceType"}, "m5 large", "instanceType must be a valid label value"},
		fieldCase{"class zone that is not a label value", validClass, []string{"spec", "nodeTemplate", "zone"}, "zone/a", "zone must be a valid label value"},
		fieldCase{"class region that is not a label value", validClass, []string{"spec", "nodeTemplate", "region"}, "-eu", "region must be a valid label value"},
		fieldCase{"class architecture that is not a label value", validClass, []string{"spec", "nodeTemplate", "architecture"}, "x86 64", "architecture must be a valid label value"},
		fieldCase{"class placement labels at their longest", validClass, []string{"spec", "nodeTemplate"},
			map[string]any{"instanceType": longestValue, "zone": "local-a", "region": "local", "architecture": "arm64"}, ""},
		fieldCase{"class secretRef name that is not a Secret name", validClass, []string{"spec", "secretRef"}, map[string]any{"name": "User Data"}, "spec.secretRef.name must be a Secret name"},
		fieldCase{"class secretRef namespace that is not a namespace", validClass, []string{"spec", "secretRef"}, map[string]any{"name": "s", "namespace": "a.b"}, "spec.secretRef.namespace must be a namespace name"},
		fieldCase{"class credentialsSecretRef without name", validClass, []string{"spec", "credentialsSecretRef"}, map[string]any{"namespace": "default"}, "spec.credentialsSecretRef.name must be a Secret name"},

		fieldCase{"selector matchLabels key that is not a label key", validSet, []string{"spec", "selector", "matchLabels"}, map[string]any{"bad key": "a"}, "spec.selector.matchLabels: Invalid value"},
		fieldCase{"selector expression key that is not a label key", validSet, []string{"spec", "selector", "matchExpressions"},
			[]any{map[string]any{"key": "pool?", "operator": "Exists"}}, "spec.selector.matchExpressions[0].key: Invalid value"},
		fieldCase{"selector expression value that is not a label value", validDeployment, []string{"spec", "selector", "matchExpressions"},
			[]any{map[string]any{"key": "pool", "operator": "In", "values": []any{"a", "b c"}}}, "spec.selector.matchExpressions[0].values: Invalid value"},
		fieldCase{"selector In expression without values", validDeployment, []string{"spec", "selector", "matchExpressions"},
			[]any{map[string]any{"key": "pool", "operator": "In"}}, "matchExpressions values must be non-empty for In and NotIn"},
		fieldCase{"selector Exists expression with values", validDeployment, []string{"spec", "selector", "matchExpressions"},
			[]any{map[string]any{"key": "pool", "operator": "Exists", "values": []any{"a"}}}, "empty for Exists and DoesNotExist"},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, tc.base)
			set(u, tc.value, tc.path...)
			err := create(t, u)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("a valid %s was refused: %v", strings.Join(tc.path, "."), err)
				}
				return
			}
			expectRefused(t, err, tc.want)
		})
	}
}
