package machinefacts_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

func rollingMD(replicas int32, surge, unavailable *intstr.IntOrString) *v1alpha1.MachineDeployment {
	md := &v1alpha1.MachineDeployment{}
	md.Spec.Replicas = replicas
	md.Spec.Strategy.Type = v1alpha1.RollingUpdateStrategy
	if surge != nil || unavailable != nil {
		md.Spec.Strategy.RollingUpdate = &v1alpha1.RollingUpdateMachineDeployment{MaxSurge: surge, MaxUnavailable: unavailable}
	}
	return md
}

func ios(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

func TestFenceposts(t *testing.T) {
	recreate := rollingMD(10, nil, nil)
	recreate.Spec.Strategy.Type = v1alpha1.RecreateStrategy
	untyped := rollingMD(4, nil, nil)
	untyped.Spec.Strategy.Type = ""
	tests := []struct {
		name               string
		md                 *v1alpha1.MachineDeployment
		surge, unavailable int32
		wantErr            bool
	}{
		{"nil rollingUpdate: maxSurge 1, maxUnavailable 0", rollingMD(10, nil, nil), 1, 0, false},
		{"no type means RollingUpdate", untyped, 1, 0, false},
		{"Recreate has neither", recreate, 0, 0, false},
		{"absolute", rollingMD(10, ios("2"), ios("1")), 2, 1, false},
		{"25% of 10: surge rounds up, unavailable down", rollingMD(10, ios("25%"), ios("25%")), 3, 2, false},
		{"MCM's example: 30% of 10", rollingMD(10, ios("30%"), ios("30%")), 3, 3, false},
		{"both round to 0: maxUnavailable becomes 1", rollingMD(5, ios("0%"), ios("10%")), 0, 1, false},
		{"maxUnavailable above replicas is replicas", rollingMD(3, ios("0"), ios("5")), 0, 3, false},
		{"only maxUnavailable set: maxSurge defaults to 1", rollingMD(10, nil, ios("2")), 1, 2, false},
		{"bad percentage", rollingMD(10, ios("x%"), nil), 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, u, err := machinefacts.Fenceposts(tc.md)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (s != tc.surge || u != tc.unavailable) {
				t.Errorf("Fenceposts = %d, %d; want %d, %d", s, u, tc.surge, tc.unavailable)
			}
		})
	}
}
