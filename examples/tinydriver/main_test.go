package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
	"github.com/millwright-dev/millwright/pkg/driver/drivertest"
)

// validating adds the one check tiny leaves out for brevity — refusing a
// providerSpec it cannot use — so the conformance suite can run in full.
type validating struct{ *tiny }

func (v validating) CreateMachine(ctx context.Context, r *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	var spec map[string]any
	if err := json.Unmarshal(r.MachineClass.Spec.ProviderSpec.Raw, &spec); err != nil {
		return nil, driver.Errorf(driver.InvalidArgument, "providerSpec: not a JSON object: %v", err)
	}
	return v.tiny.CreateMachine(ctx, r)
}

func class(spec string) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny", Namespace: "default"},
		Spec:       v1alpha1.MachineClassSpec{Provider: "tiny", ProviderSpec: runtime.RawExtension{Raw: []byte(spec)}},
	}
}

func TestTinyDriverConforms(t *testing.T) {
	drivertest.Run(t, drivertest.Config{
		Driver:       validating{&tiny{vms: map[string]string{}}},
		Class:        class(`{}`),
		InvalidClass: class(`not json`),
	})
}

// TestREADMEShowsThisFile checks the README's "Write a driver" snippet is
// this driver's code, from its type to main, so the code readers copy is
// the code the conformance suite passes.
func TestREADMEShowsThisFile(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	body := string(src[bytes.Index(src, []byte("type tiny struct")):])
	if !strings.Contains(string(readme), "```go\n"+body+"```\n") {
		t.Fatalf("README.md's tinydriver snippet is not examples/tinydriver/main.go from `type tiny struct` on; paste this:\n%s", body)
	}
}
