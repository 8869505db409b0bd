package machinedeployment

import (
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func baseTemplate() *v1alpha1.MachineTemplateSpec {
	return &v1alpha1.MachineTemplateSpec{
		Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"pool": "web"}},
		Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "small"}},
	}
}

func TestTemplateHash(t *testing.T) {
	base := templateHash(baseTemplate(), nil, nil)
	if !regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{1,10}$`).MatchString(base) {
		t.Fatalf("hash %q is not a short safe string", base)
	}
	// Pinned: a MachineSet's name must not change between versions, or an
	// upgrade would roll every fleet.
	if base != "b6cc69768" {
		t.Fatalf("hash of the base template is %q, was b6cc69768: every existing MachineSet would be replaced", base)
	}

	tests := []struct {
		name string
		edit func(*v1alpha1.MachineTemplateSpec)
		same bool
	}{
		{"labels change in place", func(t *v1alpha1.MachineTemplateSpec) { t.Metadata.Labels["team"] = "a" }, true},
		{"annotations change in place", func(t *v1alpha1.MachineTemplateSpec) {
			t.Metadata.Annotations = map[string]string{"note": "x"}
		}, true},
		{"node template changes in place", func(t *v1alpha1.MachineTemplateSpec) {
			t.Spec.NodeTemplate.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
			t.Spec.NodeTemplate.Metadata.Labels = map[string]string{"role": "web"}
		}, true},
		{"lifecycle changes in place", func(t *v1alpha1.MachineTemplateSpec) {
			t.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: time.Minute}
			t.Spec.Lifecycle.MaxEvictRetries = ptr.To[int32](3)
		}, true},
		{"class replaces", func(t *v1alpha1.MachineTemplateSpec) { t.Spec.Class.Name = "large" }, false},
		{"failure domain replaces", func(t *v1alpha1.MachineTemplateSpec) { t.Spec.FailureDomain = "zone-b" }, false},
		{"bootstrap replaces", func(t *v1alpha1.MachineTemplateSpec) {
			t.Spec.Bootstrap.DataSecretName = ptr.To("boot")
		}, false},
		{"cluster name replaces", func(t *v1alpha1.MachineTemplateSpec) { t.Spec.ClusterName = "c2" }, false},
		{"infrastructure ref replaces", func(t *v1alpha1.MachineTemplateSpec) {
			t.Spec.Class = nil
			t.Spec.InfrastructureRef = &v1alpha1.ContractReference{APIGroup: "infra.example", Kind: "SimMachine", Name: "a"}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			edited := baseTemplate()
			tc.edit(edited)
			got := templateHash(edited, nil, nil)
			if (got == base) != tc.same {
				t.Errorf("hash %q vs base %q: same = %v, want %v", got, base, got == base, tc.same)
			}
			if sameMachines(edited, baseTemplate()) != tc.same {
				t.Errorf("sameMachines = %v, want %v", !tc.same, tc.same)
			}
		})
	}
}

func TestTemplateHashCollisionCount(t *testing.T) {
	seen := map[string]bool{templateHash(baseTemplate(), nil, nil): true}
	for i := int32(0); i < 5; i++ {
		h := templateHash(baseTemplate(), ptr.To(i), nil)
		if seen[h] {
			t.Fatalf("collisionCount %d gives a hash already seen: %q", i, h)
		}
		seen[h] = true
	}
}

// A set stops being current only once spec.rolloutAfter has passed and
// only if it was not made to answer it (or a later one); the set made for
// the restart has a name of its own and stays current.
func TestIsCurrentSetAfterRolloutAfter(t *testing.T) {
	restart := metav1.NewTime(time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC))
	md := &v1alpha1.MachineDeployment{Spec: v1alpha1.MachineDeploymentSpec{Template: *baseTemplate(), RolloutAfter: &restart}}
	set := func(answered string) *v1alpha1.MachineSet {
		ms := &v1alpha1.MachineSet{Spec: v1alpha1.MachineSetSpec{Template: *baseTemplate()}}
		if answered != "" {
			ms.Annotations = map[string]string{v1alpha1.RolloutAfterAnnotation: answered}
		}
		return ms
	}
	for _, c := range []struct {
		name     string
		answered string
		now      time.Time
		want     bool
	}{
		{"rolloutAfter still to come", "", restart.Add(-time.Millisecond), true},
		{"rolloutAfter passed, set made before it", "", restart.Time, false},
		{"set made for an earlier restart", "2026-11-24T10:00:00Z", restart.Add(time.Minute), false},
		{"set made for this restart", "2026-11-24T11:00:00Z", restart.Add(time.Minute), true},
		{"set made after a later one", "2026-11-24T12:00:00Z", restart.Add(time.Minute), true},
		{"unreadable annotation", "yesterday", restart.Add(time.Minute), false},
	} {
		if got := isCurrentSet(set(c.answered), md, c.now); got != c.want {
			t.Errorf("%s: isCurrentSet = %v, want %v", c.name, got, c.want)
		}
	}
	other := set("")
	other.Spec.Template.Spec.Class.Name = "large"
	if isCurrentSet(other, md, restart.Add(-time.Hour)) {
		t.Error("a set of another template is current")
	}

	before := templateHash(baseTemplate(), nil, nil)
	if restarted := templateHash(baseTemplate(), nil, &restart); restarted == before {
		t.Errorf("a passed rolloutAfter does not change the set's name (%s)", before)
	}
	later := metav1.NewTime(restart.Add(time.Hour))
	if templateHash(baseTemplate(), nil, &restart) == templateHash(baseTemplate(), nil, &later) {
		t.Error("two restarts give the same set name")
	}
}
