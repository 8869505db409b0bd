package machinefacts_test

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// HealthChecksSelecting names, sorted, the live checks whose selector
// parses, is not empty and matches; HealthCheckSelects agrees with it
// check by check.
func TestHealthChecksSelecting(t *testing.T) {
	check := func(name string, sel v1alpha1.LabelSelector, deleting bool) v1alpha1.MachineHealthCheck {
		c := v1alpha1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MachineHealthCheckSpec{Selector: sel}}
		if deleting {
			c.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		return c
	}
	web := v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	checks := []v1alpha1.MachineHealthCheck{
		check("zeta", web, false),
		check("alpha", web, false),
		check("gone", web, true),
		check("empty", v1alpha1.LabelSelector{}, false),
		check("db", v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, false),
		check("broken", v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}, false),
	}
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	got := machinefacts.HealthChecksSelecting(checks, m)
	if want := []string{"alpha", "zeta"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("HealthChecksSelecting = %v, want %v", got, want)
	}
	for i := range checks {
		want := checks[i].Name == "alpha" || checks[i].Name == "zeta"
		if machinefacts.HealthCheckSelects(&checks[i], labels.Set(m.Labels)) != want {
			t.Errorf("HealthCheckSelects(%s) = %v, want %v", checks[i].Name, !want, want)
		}
	}
}
