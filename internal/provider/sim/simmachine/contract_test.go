package simmachine

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/pkg/contracttest"
)

// validSpec spreads VMs over three zones; terminalSpec names an instance
// type the sim does not have, which it refuses with InvalidArgument.
const (
	validSpec    = `{"region":"local","zones":["local-a","local-b","local-c"],"instanceType":"sim.small"}`
	terminalSpec = `{"region":"local","zones":["local-a"],"instanceType":"sim.huge"}`
)

// simMachine returns an unstructured SimMachine with the providerSpec.
func simMachine(providerSpec string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"providerSpec": mustJSON(providerSpec)},
	}}
}

// TestContract runs Millwright's InfraMachine conformance suite against
// the SimMachine controller, asking the sim itself where each VM was
// placed and whether it is gone.
func TestContract(t *testing.T) {
	s := startController(t)
	contracttest.Run(t, contracttest.Config{
		RESTConfig:           env.Config,
		InfraMachine:         infrav1.GroupVersion.WithKind("SimMachine"),
		InfraMachineTemplate: infrav1.GroupVersion.WithKind("SimMachineTemplate"),
		NewInfraMachine: func(v contracttest.Variant) *unstructured.Unstructured {
			if v == contracttest.TerminalFailure {
				return simMachine(terminalSpec)
			}
			return simMachine(validSpec)
		},
		FailureDomain: "local-c",
		PlacedIn: func(_ context.Context, u *unstructured.Unstructured) (string, error) {
			id, _, _ := unstructured.NestedString(u.Object, "spec", "providerID")
			vm, ok := vmByProviderID(s, id)
			if !ok {
				return "", fmt.Errorf("the sim has no VM %q", id)
			}
			return vm.Zone, nil
		},
		Exists: func(_ context.Context, providerID string) (bool, error) {
			_, ok := vmByProviderID(s, providerID)
			return ok, nil
		},
	})
}

func vmByProviderID(s *sim.Sim, providerID string) (sim.VM, bool) {
	for _, vm := range s.Cloud().VMs() {
		if vm.ProviderID == providerID {
			return vm, true
		}
	}
	return sim.VM{}, false
}
