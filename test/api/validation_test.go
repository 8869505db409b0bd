package api_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// invalidCase is an object the API server must refuse at creation, with a
// message containing want.
type invalidCase struct {
	name   string
	base   string
	mutate func(u *unstructured.Unstructured)
	want   string
}

func TestInvalidObjectsAreRefused(t *testing.T) {
	cases := []invalidCase{
		// MachineDrainRule
		{"drain rule with an order but behavior Skip", validDrainRule,
			func(u *unstructured.Unstructured) { set(u, "Skip", "spec", "drain", "behavior") },
			"spec.drain.order may only be set when spec.drain.behavior is Drain"},
		{"drain rule with an order but behavior WaitCompleted", validDrainRule,
			func(u *unstructured.Unstructured) { set(u, "WaitCompleted", "spec", "drain", "behavior") },
			"spec.drain.order may only be set when spec.drain.behavior is Drain"},
		{"drain rule with an unknown behavior", validDrainRule,
			func(u *unstructured.Unstructured) { set(u, "Evict", "spec", "drain", "behavior") },
			"spec.drain.behavior: Unsupported value"},
		{"drain rule without behavior", validDrainRule,
			func(u *unstructured.Unstructured) { set(u, nil, "spec", "drain", "behavior") },
			"spec.drain.behavior: Required value"},
		{"drain rule order that is not a number", validDrainRule,
			func(u *unstructured.Unstructured) { set(u, "first", "spec", "drain", "order") },
			"spec.drain.order: Invalid value"},
		{"drain rule pod selector with an unknown operator", validDrainRule,
			func(u *unstructured.Unstructured) {
				set(u, []any{map[string]any{"selector": map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "Near"}}}}}, "spec", "pods")
			},
			"Unsupported value"},
		{"drain rule namespace selector with an invalid label key", validDrainRule,
			func(u *unstructured.Unstructured) {
				set(u, []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"bad key!": "x"}}}}, "spec", "pods")
			},
			"matchLabels keys must be valid label keys"},
		{"drain rule with too many pod selectors", validDrainRule,
			func(u *unstructured.Unstructured) {
				sel := map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}}}
				set(u, []any{sel, sel, sel, sel, sel}, "spec", "pods")
			},
			"spec.pods: Too many"},
		{"negative node deletion timeout", validMachine,
			func(u *unstructured.Unstructured) { set(u, "-1m", "spec", "lifecycle", "nodeDeletionTimeout") },
			"spec.lifecycle.nodeDeletionTimeout must be a duration of zero or more"},

		// Machine
		{"machine without class or infrastructureRef", validMachine,
			func(u *unstructured.Unstructured) { set(u, nil, "spec", "class") },
			"exactly one of spec.class"},
		{"machine with both class and infrastructureRef", validMachine,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"apiGroup": "infrastructure.millwright.dev", "kind": "SimMachine", "name": "x"}, "spec", "infrastructureRef")
			},
			"exactly one of spec.class"},
		{"machine class with empty name", validMachine,
			func(u *unstructured.Unstructured) { set(u, "", "spec", "class", "name") },
			"spec.class.name"},
		{"infrastructureRef without kind", validInfraMachine,
			func(u *unstructured.Unstructured) { set(u, nil, "spec", "infrastructureRef", "kind") },
			"spec.infrastructureRef.kind: Required value"},
		{"zero creation timeout", validMachine,
			func(u *unstructured.Unstructured) { set(u, "0s", "spec", "lifecycle", "creationTimeout") },
			"spec.lifecycle.creationTimeout must be a positive duration"},
		{"unparsable health timeout", validMachine,
			func(u *unstructured.Unstructured) { set(u, "ten minutes", "spec", "lifecycle", "healthTimeout") },
			"spec.lifecycle.healthTimeout must be a positive duration"},
		{"negative drain timeout", validMachine,
			func(u *unstructured.Unstructured) { set(u, "-5m", "spec", "lifecycle", "drainTimeout") },
			"spec.lifecycle.drainTimeout must be a positive duration"},
		{"negative maxEvictRetries", validMachine,
			func(u *unstructured.Unstructured) { set(u, -1, "spec", "lifecycle", "maxEvictRetries") },
			"spec.lifecycle.maxEvictRetries in body should be greater than or equal to 0"},
		{"node condition that is not a condition type", validMachine,
			func(u *unstructured.Unstructured) {
				set(u, []any{"KernelDeadlock", "Disk Pressure!"}, "spec", "lifecycle", "nodeConditions")
			},
			"spec.lifecycle.nodeConditions entries must be Node condition types"},
		{"duplicate node conditions", validMachine,
			func(u *unstructured.Unstructured) {
				set(u, []any{"KernelDeadlock", "KernelDeadlock"}, "spec", "lifecycle", "nodeConditions")
			},
			"Duplicate value"},

		// MachineClass
		{"class without provider", validClass,
			func(u *unstructured.Unstructured) { set(u, nil, "spec", "provider") },
			"spec.provider: Required value"},
		{"class with an empty provider", validClass,
			func(u *unstructured.Unstructured) { set(u, "", "spec", "provider") },
			"spec.provider must be a DNS label"},
		{"class with a provider that is not a DNS label", validClass,
			func(u *unstructured.Unstructured) { set(u, "My_Cloud", "spec", "provider") },
			"spec.provider must be a DNS label"},
		{"class with a provider name over 63 characters", validClass,
			func(u *unstructured.Unstructured) { set(u, strings.Repeat("a", 64), "spec", "provider") },
			"spec.provider: Too long"},
		{"class with maxConcurrentCreates 0", validClass,
			func(u *unstructured.Unstructured) { set(u, int64(0), "spec", "maxConcurrentCreates") },
			"spec.maxConcurrentCreates must be at least 1"},
		{"class with a negative maxConcurrentCreates", validClass,
			func(u *unstructured.Unstructured) { set(u, int64(-3), "spec", "maxConcurrentCreates") },
			"spec.maxConcurrentCreates must be at least 1"},
		{"class with maxConcurrentDeletes 0", validClass,
			func(u *unstructured.Unstructured) { set(u, int64(0), "spec", "maxConcurrentDeletes") },
			"spec.maxConcurrentDeletes must be at least 1"},
		{"class with a negative maxConcurrentDeletes", validClass,
			func(u *unstructured.Unstructured) { set(u, int64(-1), "spec", "maxConcurrentDeletes") },
			"spec.maxConcurrentDeletes must be at least 1"},

		// MachineSet
		{"set with negative replicas", validSet,
			func(u *unstructured.Unstructured) { set(u, -1, "spec", "replicas") },
			"spec.replicas in body should be greater than or equal to 0"},
		{"set with an empty selector", validSet,
			func(u *unstructured.Unstructured) { set(u, map[string]any{}, "spec", "selector") },
			"spec.selector must not be empty"},
		{"set whose matchLabels miss the template", validSet,
			func(u *unstructured.Unstructured) { set(u, "b", "spec", "selector", "matchLabels", "pool") },
			"spec.selector.matchLabels does not match spec.template.metadata.labels"},
		{"set whose In expression misses the template", validSet,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"b", "c"}}}}, "spec", "selector")
			},
			"spec.selector.matchExpressions do not match spec.template.metadata.labels"},
		{"set whose DoesNotExist expression excludes the template", validSet,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"matchExpressions": []any{map[string]any{"key": "extra", "operator": "DoesNotExist"}}}, "spec", "selector")
			},
			"spec.selector.matchExpressions do not match spec.template.metadata.labels"},
		{"set template without labels", validSet,
			func(u *unstructured.Unstructured) { set(u, nil, "spec", "template", "metadata") },
			"spec.selector.matchLabels does not match spec.template.metadata.labels"},
		{"set with an unknown delete policy", validSet,
			func(u *unstructured.Unstructured) { set(u, "Biggest", "spec", "deletePolicy") },
			`spec.deletePolicy: Unsupported value: "Biggest"`},
		{"set template with a providerID", validSet,
			func(u *unstructured.Unstructured) { set(u, "sim://a/b/c", "spec", "template", "spec", "providerID") },
			"spec.template.spec.providerID must not be set"},
		{"set template without class or infrastructureRef", validSet,
			func(u *unstructured.Unstructured) { set(u, nil, "spec", "template", "spec", "class") },
			"exactly one of spec.class"},

		// MachineDeployment
		{"deployment with maxSurge and maxUnavailable both 0", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"maxSurge": 0, "maxUnavailable": 0}, "spec", "strategy", "rollingUpdate")
			},
			"maxSurge and maxUnavailable cannot both be zero"},
		{"deployment with maxSurge 0% and maxUnavailable defaulted to 0", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"maxSurge": "0%"}, "spec", "strategy", "rollingUpdate")
			},
			"maxSurge and maxUnavailable cannot both be zero"},
		{"deployment with negative maxSurge", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"maxSurge": -1}, "spec", "strategy", "rollingUpdate")
			},
			"spec.strategy.rollingUpdate.maxSurge must be a non-negative integer (5) or a percentage (10%)"},
		{"deployment with a malformed maxUnavailable percentage", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"maxUnavailable": "ten%"}, "spec", "strategy", "rollingUpdate")
			},
			"spec.strategy.rollingUpdate.maxUnavailable must be a non-negative integer (5) or a percentage from 0% to 100% (10%)"},
		{"deployment with maxSurge as a bare numeric string", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"maxSurge": "2"}, "spec", "strategy", "rollingUpdate")
			},
			"spec.strategy.rollingUpdate.maxSurge must be a non-negative integer (5) or a percentage (10%)"},
		{"Recreate deployment with rollingUpdate", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"type": "Recreate", "rollingUpdate": map[string]any{"maxSurge": 1}}, "spec", "strategy")
			},
			"spec.strategy.rollingUpdate may only be set when spec.strategy.type is RollingUpdate"},
		{"deployment with an unknown strategy", validDeployment,
			func(u *unstructured.Unstructured) { set(u, map[string]any{"type": "BlueGreen"}, "spec", "strategy") },
			`spec.strategy.type: Unsupported value: "BlueGreen"`},
		{"deployment with negative revisionHistoryLimit", validDeployment,
			func(u *unstructured.Unstructured) { set(u, -1, "spec", "revisionHistoryLimit") },
			"spec.revisionHistoryLimit in body should be greater than or equal to 0"},
		{"deployment whose progress deadline is within minReadySeconds", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, 30, "spec", "minReadySeconds")
				set(u, 10, "spec", "progressDeadlineSeconds")
			},
			"spec.progressDeadlineSeconds must be greater than spec.minReadySeconds"},
		{"deployment with negative minReadySeconds", validDeployment,
			func(u *unstructured.Unstructured) { set(u, -1, "spec", "minReadySeconds") },
			"spec.minReadySeconds in body should be greater than or equal to 0"},
		{"deployment with negative replicas", validDeployment,
			func(u *unstructured.Unstructured) { set(u, -3, "spec", "replicas") },
			"spec.replicas in body should be greater than or equal to 0"},
		{"deployment whose NotIn expression excludes the template", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "NotIn", "values": []any{"a"}}}}, "spec", "selector")
			},
			"spec.selector.matchExpressions do not match spec.template.metadata.labels"},
		{"InPlace deployment with maxUnavailable 0", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"maxUnavailable": 0}}, "spec", "strategy")
			},
			"spec.strategy.inPlace.maxUnavailable must be a positive integer (1) or a percentage from 1% to 100% (10%)"},
		{"InPlace deployment with maxUnavailable 0%", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"maxUnavailable": "0%"}}, "spec", "strategy")
			},
			"spec.strategy.inPlace.maxUnavailable must be a positive integer"},
		{"InPlace deployment with an unknown orchestration", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"orchestration": "Canary"}}, "spec", "strategy")
			},
			`spec.strategy.inPlace.orchestration: Unsupported value: "Canary"`},
		{"RollingUpdate deployment with inPlace", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"type": "RollingUpdate", "inPlace": map[string]any{"maxUnavailable": 1}}, "spec", "strategy")
			},
			"spec.strategy.inPlace may only be set when spec.strategy.type is InPlace"},
		{"InPlace deployment with a negative maxFailed", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"maxFailed": -1}}, "spec", "strategy")
			},
			"spec.strategy.inPlace.maxFailed in body should be greater than or equal to 0"},
		{"deployment template with a version that is not a Kubernetes version", validDeployment,
			func(u *unstructured.Unstructured) { set(u, "1.36", "spec", "template", "spec", "version") },
			"spec.template.spec.version in body should match"},
		{"machine with a version that is not a Kubernetes version", validMachine,
			func(u *unstructured.Unstructured) { set(u, "latest", "spec", "version") },
			"spec.version in body should match"},
		{"deployment with an invalid template lifecycle", validDeployment,
			func(u *unstructured.Unstructured) {
				set(u, "0m", "spec", "template", "spec", "lifecycle", "healthTimeout")
			},
			"spec.lifecycle.healthTimeout must be a positive duration"},
	}
	if len(cases) < 25 {
		t.Fatalf("the issue asks for at least 25 refused objects; the table has %d", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, tc.base)
			tc.mutate(u)
			expectRefused(t, create(t, u), tc.want)
		})
	}
}

// updateCase is a valid object that the API server must refuse to change
// as mutate does, with a message containing want.
type updateCase struct {
	name   string
	base   string
	status bool // the change goes through the status subresource
	// beforeStatus: the first change (before) goes through the status
	// subresource while the refused one does not.
	beforeStatus bool
	before       func(u *unstructured.Unstructured)
	mutate       func(u *unstructured.Unstructured)
	want         string
}

func TestInvalidUpdatesAreRefused(t *testing.T) {
	withProviderID := func(u *unstructured.Unstructured) { set(u, "sim://local/a/vm-1", "spec", "providerID") }
	withFailure := func(u *unstructured.Unstructured) {
		set(u, "InvalidConfiguration", "status", "failureReason")
		set(u, "the image does not exist", "status", "failureMessage")
	}
	cases := []updateCase{
		{name: "machine class renamed", base: validMachine,
			mutate: func(u *unstructured.Unstructured) { set(u, "other", "spec", "class", "name") },
			want:   "spec.class is immutable"},
		{name: "machine switched from class to infrastructureRef", base: validMachine,
			mutate: func(u *unstructured.Unstructured) {
				set(u, nil, "spec", "class")
				set(u, map[string]any{"apiGroup": "infrastructure.millwright.dev", "kind": "SimMachine", "name": "x"}, "spec", "infrastructureRef")
			},
			want: "spec.class is immutable"},
		{name: "machine infrastructureRef renamed", base: validInfraMachine,
			mutate: func(u *unstructured.Unstructured) { set(u, "other", "spec", "infrastructureRef", "name") },
			want:   "spec.infrastructureRef is immutable"},
		{name: "providerID changed", base: validMachine, before: withProviderID,
			mutate: func(u *unstructured.Unstructured) { set(u, "sim://local/a/vm-2", "spec", "providerID") },
			want:   "spec.providerID is immutable once set"},
		{name: "providerID removed", base: validMachine, before: withProviderID,
			mutate: func(u *unstructured.Unstructured) { set(u, nil, "spec", "providerID") },
			want:   "spec.providerID is immutable once set"},
		{name: "failureReason cleared", base: validMachine, status: true, before: withFailure,
			mutate: func(u *unstructured.Unstructured) { set(u, nil, "status", "failureReason") },
			want:   "status.failureReason is terminal"},
		{name: "failureMessage cleared", base: validMachine, status: true, before: withFailure,
			mutate: func(u *unstructured.Unstructured) { set(u, nil, "status", "failureMessage") },
			want:   "status.failureMessage is terminal"},
		{name: "machine version set by hand", base: validMachine,
			mutate: func(u *unstructured.Unstructured) { set(u, "v1.36.4", "spec", "version") },
			want:   "spec.version changes only through an in-place update"},
		{name: "machine class changed while its in-place update is still running", base: validMachine, beforeStatus: true,
			before: func(u *unstructured.Unstructured) {
				set(u, map[string]any{"targetSet": "s2", "class": "other", "phase": "Updating"}, "status", "inPlaceUpdate")
			},
			mutate: func(u *unstructured.Unstructured) { set(u, "other", "spec", "class", "name") },
			want:   "spec.class is immutable"},
		{name: "machine class changed to another class than its in-place update applied", base: validMachine, beforeStatus: true,
			before: func(u *unstructured.Unstructured) {
				set(u, map[string]any{"targetSet": "s2", "class": "other", "phase": "Succeeded"}, "status", "inPlaceUpdate")
			},
			mutate: func(u *unstructured.Unstructured) { set(u, "third", "spec", "class", "name") },
			want:   "spec.class is immutable"},
		{name: "unknown in-place update phase", base: validMachine, status: true,
			mutate: func(u *unstructured.Unstructured) {
				set(u, map[string]any{"targetSet": "s2", "phase": "Rebooting"}, "status", "inPlaceUpdate")
			},
			want: `status.inPlaceUpdate.phase: Unsupported value: "Rebooting"`},
		{name: "unknown phase", base: validMachine, status: true,
			mutate: func(u *unstructured.Unstructured) { set(u, "Exploded", "status", "phase") },
			want:   `status.phase: Unsupported value: "Exploded"`},
		{name: "nodeRef to something other than a Node", base: validMachine, status: true,
			mutate: func(u *unstructured.Unstructured) {
				set(u, map[string]any{"kind": "Pod", "name": "x"}, "status", "nodeRef")
			},
			want: `status.nodeRef.kind: Unsupported value: "Pod"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, tc.base)
			if err := create(t, u); err != nil {
				t.Fatalf("creating the valid base object: %v", err)
			}
			if tc.before != nil {
				tc.before(u)
				if err := update(u, tc.status || tc.beforeStatus); err != nil {
					t.Fatalf("making the valid first change: %v", err)
				}
			}
			tc.mutate(u)
			expectRefused(t, update(u, tc.status), tc.want)
		})
	}
}

// TestAllowedUpdates guards against rules that are too strict: the changes
// controllers and users must be able to make.
func TestAllowedUpdates(t *testing.T) {
	cases := []struct {
		name   string
		base   string
		status bool
		mutate func(u *unstructured.Unstructured)
	}{
		{"providerID set for the first time", validMachine, false,
			func(u *unstructured.Unstructured) { set(u, "sim://local/a/vm-1", "spec", "providerID") }},
		{"machine lifecycle changed", validMachine, false,
			func(u *unstructured.Unstructured) { set(u, "30m", "spec", "lifecycle", "healthTimeout") }},
		{"failure recorded", validMachine, true,
			func(u *unstructured.Unstructured) { set(u, "InvalidConfiguration", "status", "failureReason") }},
		{"deployment template switched to another class (a rollout)", validDeployment, false,
			func(u *unstructured.Unstructured) { set(u, "sim-large", "spec", "template", "spec", "class", "name") }},
		{"set template switched from class to infrastructureRef", validSet, false,
			func(u *unstructured.Unstructured) {
				set(u, nil, "spec", "template", "spec", "class")
				set(u, map[string]any{"apiGroup": "infrastructure.millwright.dev", "kind": "SimMachineTemplate", "name": "t"}, "spec", "template", "spec", "infrastructureRef")
			}},
		{"class limited to 5 creates and 1 delete at once", validClass, false,
			func(u *unstructured.Unstructured) {
				set(u, int64(5), "spec", "maxConcurrentCreates")
				set(u, int64(1), "spec", "maxConcurrentDeletes")
			}},
		{"deployment with percentages", validDeployment, false,
			func(u *unstructured.Unstructured) {
				set(u, map[string]any{"maxSurge": "25%", "maxUnavailable": "10%"}, "spec", "strategy", "rollingUpdate")
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, tc.base)
			if err := create(t, u); err != nil {
				t.Fatalf("creating the valid base object: %v", err)
			}
			tc.mutate(u)
			if err := update(u, tc.status); err != nil {
				t.Fatalf("a valid change was refused: %v", err)
			}
		})
	}
}

// TestInPlaceUpdateMovesClassAndVersion: once a Machine's status records a
// succeeded in-place update, its spec may take the class and version that
// update applied (the machine controller's move).
func TestInPlaceUpdateMovesClassAndVersion(t *testing.T) {
	u := object(t, validMachine)
	set(u, "v1.36.3", "spec", "version")
	if err := create(t, u); err != nil {
		t.Fatalf("creating the valid base object: %v", err)
	}
	set(u, map[string]any{"targetSet": "s2", "class": "other", "version": "v1.36.4", "phase": "Succeeded"}, "status", "inPlaceUpdate")
	if err := update(u, true); err != nil {
		t.Fatalf("recording the succeeded update: %v", err)
	}
	set(u, "other", "spec", "class", "name")
	set(u, "v1.36.4", "spec", "version")
	if err := update(u, false); err != nil {
		t.Fatalf("moving the Machine to the class and version its in-place update applied was refused: %v", err)
	}
}

func update(u *unstructured.Unstructured, status bool) error {
	if status {
		return env.Client.Status().Update(context.Background(), u)
	}
	return env.Client.Update(context.Background(), u)
}

func expectRefused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted the object; want it refused with %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error containing %q, got %v", want, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("the refusal does not say %q:\n%v", want, err)
	}
}
