package contracttest

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRDName pluralises kinds as the CRD names of Cluster API providers do.
func TestCRDName(t *testing.T) {
	for kind, want := range map[string]string{
		"SimMachine":         "simmachines.infra.example",
		"SimMachineTemplate": "simmachinetemplates.infra.example",
		"FooMachineClass":    "foomachineclasses.infra.example",
		"Proxy":              "proxies.infra.example",
		"Gateway":            "gateways.infra.example",
		"Box":                "boxes.infra.example",
	} {
		if got := CRDName(schema.GroupKind{Group: "infra.example", Kind: kind}); got != want {
			t.Errorf("CRDName(%s) = %q; want %q", kind, got, want)
		}
	}
}
