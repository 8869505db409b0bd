package machine

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// gauges collects c into "desc namespace/label" → value, label being the
// phase (with the deployment) or the preservation reason.
func gauges(t *testing.T, c *phaseCounts) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	got := map[string]float64{}
	for metric := range ch {
		var out dto.Metric
		if err := metric.Write(&out); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range out.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		key := "preserved " + labels["namespace"] + "/" + labels["reason"]
		if metric.Desc() == machinesDesc {
			key = "machines " + labels["namespace"] + "/" + labels["phase"] + "/" + labels["deployment"]
		}
		got[key] = out.GetGauge().GetValue()
	}
	return got
}

func sameGauges(got, want map[string]float64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// The phase gauges follow each Machine's adds, updates and deletions: a
// Machine counts once, under its latest phase; the preserved gauge counts
// Machines whose Preserved condition is True, by reason (an expired
// preservation is not counted); nothing is reported before the informer
// has synced.
func TestPhaseCounts(t *testing.T) {
	m := func(name string, phase v1alpha1.MachinePhase, status metav1.ConditionStatus, reason string) *v1alpha1.Machine {
		x := &v1alpha1.Machine{}
		x.Name, x.Namespace = name, "ns"
		x.Labels = map[string]string{v1alpha1.MachineDeploymentNameLabel: "d"}
		x.Status.Phase = phase
		if reason != "" {
			x.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PreservedCondition, Status: status, Reason: reason}}
		}
		return x
	}
	c := newPhaseCounts()
	synced := false
	c.synced = func() bool { return synced }
	a := m("a", v1alpha1.PhaseFailed, metav1.ConditionTrue, v1alpha1.PreservedAutoReason)
	b := m("b", v1alpha1.PhaseFailed, metav1.ConditionTrue, v1alpha1.PreservedAutoReason)
	e := m("e", v1alpha1.PhaseProvisioned, "", "")
	for _, x := range []*v1alpha1.Machine{a, b, e,
		m("c", v1alpha1.PhaseRunning, metav1.ConditionTrue, v1alpha1.PreservedNowReason),
		m("d", v1alpha1.PhaseFailed, metav1.ConditionFalse, v1alpha1.PreserveExpiredReason)} {
		c.change(nil, x)
	}
	if got := gauges(t, c); len(got) != 0 {
		t.Fatalf("reported %v before the informer synced", got)
	}
	synced = true
	want := map[string]float64{
		"machines ns/Failed/d": 3, "machines ns/Running/d": 1, "machines ns/Provisioned/d": 1,
		"preserved ns/" + v1alpha1.PreservedAutoReason: 2, "preserved ns/" + v1alpha1.PreservedNowReason: 1,
	}
	if got := gauges(t, c); !sameGauges(got, want) {
		t.Errorf("after the adds: %v, want %v", got, want)
	}

	c.change(e, m("e", v1alpha1.PhaseRunning, "", ""))                                               // e Provisioned → Running
	c.change(a, m("a", v1alpha1.PhaseFailed, metav1.ConditionFalse, v1alpha1.PreserveExpiredReason)) // a's preservation expired
	c.change(b, nil)
	want = map[string]float64{
		"machines ns/Failed/d": 2, "machines ns/Running/d": 2,
		"preserved ns/" + v1alpha1.PreservedNowReason: 1,
	}
	if got := gauges(t, c); !sameGauges(got, want) {
		t.Errorf("after the updates and deletion: %v, want %v", got, want)
	}
}
