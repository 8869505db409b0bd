package main

import (
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// describe reads name, help and labels back from client_golang's Desc
// (a help with quotes and commas included), and the type from a sample
// or, for a vector with no child yet, from the Go type.
func TestDescribe(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: `a "quoted", help`}, []string{"a", "b"})
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "y", Help: "h"})
	hist := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "z_seconds", Help: "h"})
	want := []metric{
		{name: "x_total", typ: "counter", help: `a "quoted", help`, labels: []string{"a", "b"}},
		{name: "y", typ: "gauge", help: "h"},
		{name: "z_seconds", typ: "histogram", help: "h"},
	}
	for i, c := range []prometheus.Collector{vec, gauge, hist} {
		got, err := describe(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], want[i]) {
			t.Errorf("describe: got %+v, want %+v", got, want[i])
		}
	}
}
