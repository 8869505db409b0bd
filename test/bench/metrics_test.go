package main

import "testing"

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line   string
		ok     bool
		name   string
		method string
		value  float64
	}{
		{`rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 42`, true, "rest_client_requests_total", "POST", 42},
		{`go_memstats_heap_alloc_bytes 1.2345e+07`, true, "go_memstats_heap_alloc_bytes", "", 1.2345e+07},
		{`# HELP go_memstats_heap_alloc_bytes Number of heap bytes.`, false, "", "", 0},
		{``, false, "", "", 0},
		{`broken{method="POST" 1`, false, "", "", 0},
	} {
		l, ok := parseLine(tc.line)
		if ok != tc.ok || l.name != tc.name || l.labels["method"] != tc.method || l.value != tc.value {
			t.Errorf("parseLine(%q) = %+v, %v; want name %q method %q value %g, %v", tc.line, l, ok, tc.name, tc.method, tc.value, tc.ok)
		}
	}
}

func TestSumFiltersLabels(t *testing.T) {
	s := sample{
		{name: "rest_client_requests_total", labels: map[string]string{"method": "POST"}, value: 3},
		{name: "rest_client_requests_total", labels: map[string]string{"method": "GET"}, value: 100},
		{name: "rest_client_requests_total", labels: map[string]string{"method": "PATCH"}, value: 4},
	}
	got := s.sum("rest_client_requests_total", func(l map[string]string) bool { return writeMethods[l["method"]] })
	if got != 7 {
		t.Errorf("writes = %g, want 7 (GETs are reads)", got)
	}
}
