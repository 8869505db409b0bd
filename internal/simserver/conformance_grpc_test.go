package simserver

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/pkg/driver/drivertest"
)

// TestConformanceOverGRPC runs the driver conformance suite against the
// sim as millwright-sim serves it: behind driver.ServeEndpoint on a unix
// socket, called through driver.Dial. It catches what the in-process run
// (internal/provider/sim TestConformance) cannot: a code, message or
// optional-method list lost on the wire.
func TestConformanceOverGRPC(t *testing.T) {
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, drivertest.Config{
		Driver:       drivertest.OverGRPC(t, s),
		Class:        simClass("conformance", `{"region":"local","zones":["local-a","local-b"],"instanceType":"sim.small"}`),
		InvalidClass: simClass("conformance-invalid", `{"region":"local","zones":[]}`),
	})
}

func simClass(name, spec string) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1alpha1.MachineClassSpec{
			Provider:     sim.DefaultName,
			ProviderSpec: runtime.RawExtension{Raw: []byte(spec)},
		},
	}
}
