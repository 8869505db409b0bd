package machine

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The preserved gauge counts Machines whose Preserved condition is True,
// by reason; an expired preservation is not counted.
func TestPreservedGauge(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := func(name string, status metav1.ConditionStatus, reason string) *v1alpha1.Machine {
		x := &v1alpha1.Machine{}
		x.Name, x.Namespace = name, "ns"
		x.Status.Phase = v1alpha1.PhaseFailed
		x.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PreservedCondition, Status: status, Reason: reason}}
		return x
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		m("a", metav1.ConditionTrue, v1alpha1.PreservedAutoReason),
		m("b", metav1.ConditionTrue, v1alpha1.PreservedAutoReason),
		m("c", metav1.ConditionTrue, v1alpha1.PreservedNowReason),
		m("d", metav1.ConditionFalse, v1alpha1.PreserveExpiredReason),
	).Build()
	ch := make(chan prometheus.Metric, 16)
	phaseCollector{reader: reader}.Collect(ch)
	close(ch)
	got := map[string]float64{}
	for metric := range ch {
		if metric.Desc() != preservedDesc {
			continue
		}
		var out dto.Metric
		if err := metric.Write(&out); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range out.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		got[labels["namespace"]+"/"+labels["reason"]] = out.GetGauge().GetValue()
	}
	want := map[string]float64{"ns/" + v1alpha1.PreservedAutoReason: 2, "ns/" + v1alpha1.PreservedNowReason: 1}
	if len(got) != len(want) || got["ns/"+v1alpha1.PreservedAutoReason] != 2 || got["ns/"+v1alpha1.PreservedNowReason] != 1 {
		t.Errorf("millwright_machines_preserved = %v, want %v", got, want)
	}
}
