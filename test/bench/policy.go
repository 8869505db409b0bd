package main

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// policyPath is the MachineDeployment field of the replacement policy. The
// benchmark sets it by path, not through the Go type, so that it builds
// against an API without the field; the API server then prunes it, which
// checkPolicy notices.
var policyPath = []string{"spec", "strategy", "rollingUpdate", "replacementPolicy"}

// createDeployment creates md with the replacement policy set.
func (b *bench) createDeployment(ctx context.Context, md *v1alpha1.MachineDeployment, policy string) error {
	u, err := withPolicy(md, policy)
	if err != nil {
		return err
	}
	if err := b.e.admin.Create(ctx, u); err != nil {
		return err
	}
	return b.checkPolicy(u, policy)
}

// withPolicy is md as an unstructured object with the policy set by path.
func withPolicy(md *v1alpha1.MachineDeployment, policy string) (*unstructured.Unstructured, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(md)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("MachineDeployment")
	return u, unstructured.SetNestedField(u.Object, policy, policyPath...)
}

// apiHasPolicy tells, by a dry-run create, whether the API server keeps
// the replacement policy field: the run fails at once, not after the
// scenarios before the one needing it, when a build lacks it.
func (e *env) apiHasPolicy(ctx context.Context) (bool, error) {
	u, err := withPolicy(machineDeployment(0), policyStarted)
	if err != nil {
		return false, err
	}
	if err := e.admin.Create(ctx, u, client.DryRunAll); err != nil {
		return false, fmt.Errorf("dry-run create of a MachineDeployment: %w", err)
	}
	got, _, _ := unstructured.NestedString(u.Object, policyPath...)
	return got == policyStarted, nil
}

// setPolicy patches the deployment's replacement policy (and nothing
// else: no rollout), outside any measurement.
func (b *bench) setPolicy(ctx context.Context, policy string) error {
	patch := map[string]any{}
	if err := unstructured.SetNestedField(patch, policy, policyPath...); err != nil {
		return err
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("MachineDeployment")
	u.SetNamespace(benchNamespace)
	u.SetName(deploymentName)
	if err := b.e.admin.Patch(ctx, u, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("setting %s: %w", policy, err)
	}
	return b.checkPolicy(u, policy)
}

// checkPolicy reads the policy back from the API server's answer u. An API
// without the field prunes it: that is TerminationComplete's behaviour
// (today's, and the field's default), so only another policy fails.
func (b *bench) checkPolicy(u *unstructured.Unstructured, policy string) error {
	got, _, _ := unstructured.NestedString(u.Object, policyPath...)
	switch {
	case got == policy:
	case got == "" && policy == policyComplete:
		logf("the API server dropped spec.strategy.rollingUpdate.replacementPolicy (no such field in this build's CRD): the manager behaves as %s", policyComplete)
	default:
		return fmt.Errorf("replacement policy %q requested, the MachineDeployment has %q: this build's CRD has no spec.strategy.rollingUpdate.replacementPolicy, so the figure would not be %s's", policy, got, policy)
	}
	b.policy = policy
	return nil
}
