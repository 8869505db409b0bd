package machinedeployment

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The scale-from-zero labels describe every Node of the group
// (docs/autoscaling.md): a group over several zones advertises no zone —
// not the class's first — and a group in one zone advertises it.
func TestCapacityAnnotationsZone(t *testing.T) {
	tests := []struct {
		name   string
		class  v1alpha1.NodeTemplate
		spread []string
		want   string
	}{
		{"a class over two zones advertises none, not its first",
			v1alpha1.NodeTemplate{Region: "local", Zone: "local-a", Zones: []string{"local-a", "local-b"}}, nil,
			"topology.kubernetes.io/region=local"},
		{"a class listing one zone advertises it", v1alpha1.NodeTemplate{Zones: []string{"local-b"}}, nil,
			"topology.kubernetes.io/zone=local-b"},
		{"a deployment spread over three zones advertises none, whatever the class's labels say",
			v1alpha1.NodeTemplate{Zones: []string{"a", "b", "c"}, Labels: map[string]string{corev1.LabelTopologyZone: "a", "team": "infra"}},
			[]string{"a", "b", "c"}, "team=infra"},
		{"a deployment spread over one zone advertises it", v1alpha1.NodeTemplate{Zone: "a", Zones: []string{"a", "b", "c"}},
			[]string{"b"}, "topology.kubernetes.io/zone=b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := capacityAnnotations(&tc.class, nil, tc.spread)[v1alpha1.AutoscalerCapacityLabels]; got != tc.want {
				t.Errorf("labels annotation %q, want %q", got, tc.want)
			}
		})
	}
}
