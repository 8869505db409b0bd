package api_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var nameSeq atomic.Int64

// object parses a YAML manifest into an unstructured object with a fresh
// name, so every case works on its own object.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("bad test manifest: %v", err)
	}
	u.SetNamespace("default")
	u.SetName(fmt.Sprintf("obj-%d", nameSeq.Add(1)))
	return u
}

// set replaces the value at a dotted path (e.g. "spec.lifecycle.drainTimeout");
// a nil value removes it.
func set(u *unstructured.Unstructured, value any, path ...string) {
	if value == nil {
		unstructured.RemoveNestedField(u.Object, path...)
		return
	}
	if err := unstructured.SetNestedField(u.Object, deepCopyJSON(value), path...); err != nil {
		panic(err)
	}
}

func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case int:
		return int64(v)
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyJSON(e)
		}
		return out
	default:
		return v
	}
}

func create(t *testing.T, u *unstructured.Unstructured) error {
	t.Helper()
	return env.Client.Create(context.Background(), u)
}

const (
	validClass = `
apiVersion: machine.millwright.dev/v1alpha1
kind: MachineClass
spec:
  provider: sim
  providerSpec: {region: local}
`
	validMachine = `
apiVersion: machine.millwright.dev/v1alpha1
kind: Machine
spec:
  class: {name: sim-small}
`
	validDrainRule = `
apiVersion: machine.millwright.dev/v1alpha1
kind: MachineDrainRule
spec:
  drain: {behavior: Drain, order: 1}
  machines:
  - selector: {matchLabels: {pool: web}}
  pods:
  - selector: {matchLabels: {app: cache}}
    namespaceSelector: {matchLabels: {tier: apps}}
`
	validInfraMachine = `
apiVersion: machine.millwright.dev/v1alpha1
kind: Machine
spec:
  infrastructureRef: {apiGroup: infrastructure.millwright.dev, kind: SimMachine, name: m}
`
	validSet = `
apiVersion: machine.millwright.dev/v1alpha1
kind: MachineSet
spec:
  replicas: 2
  selector:
    matchLabels: {pool: a}
  template:
    metadata:
      labels: {pool: a, extra: x}
    spec:
      class: {name: sim-small}
`
	validDeployment = `
apiVersion: machine.millwright.dev/v1alpha1
kind: MachineDeployment
spec:
  replicas: 3
  selector:
    matchLabels: {pool: a}
  template:
    metadata:
      labels: {pool: a}
    spec:
      class: {name: sim-small}
`
)
