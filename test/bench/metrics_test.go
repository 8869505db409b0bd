package main

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The benchmark reads the manager's metrics uncompressed: a scrape that
// asks for gzip every second keeps a pooled gzip writer in the heap the
// benchmark measures (scrapeClient).
func TestScrapeAsksForNoCompression(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_memstats_heap_alloc_bytes"}))
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	var encodings []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encodings = append(encodings, r.Header.Get("Accept-Encoding"))
		metrics.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s, err := scrape(t.Context(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 1 || s[0].name != "go_memstats_heap_alloc_bytes" {
		t.Errorf("scraped %+v, want the one gauge", s)
	}
	if len(encodings) != 1 || encodings[0] != "" {
		t.Errorf("Accept-Encoding %q, want none (uncompressed)", encodings)
	}
}

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

func TestParseAPIServerRequests(t *testing.T) {
	metrics := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="GET",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="cluster",subresource="",verb="LIST",version="v1"} 3
apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 4
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 5
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="exec",verb="CONNECT",version="v1"} 9
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 11
apiserver_request_total{code="200",component="apiserver",dry_run="",group="millwright.dev",resource="machines",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 6
apiserver_request_total{code="409",component="apiserver",dry_run="",group="millwright.dev",resource="machines",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 1
`
	writes, reads := parseAPIServerRequests(metrics)
	wantWrites := map[string]float64{"machines/status PATCH": 7, "machines/status PATCH" + conflictSuffix: 1}
	// A watch is counted when it ends; the open ones come from the gauge.
	wantReads := map[string]float64{"nodes GET": 9, "pods LIST": 3, "pods WATCH": 9}
	if !maps.Equal(writes, wantWrites) {
		t.Errorf("writes = %v, want %v", writes, wantWrites)
	}
	if !maps.Equal(reads, wantReads) {
		t.Errorf("reads = %v, want %v", reads, wantReads)
	}
}

// The peaks are read from the metrics the manager serves: controller-
// runtime's registry, whose Go collector exports the heap's gauges. A
// renamed gauge would make a peak silently zero.
func TestPeaksReadTheManagersHeapGauges(t *testing.T) {
	srv := httptest.NewServer(promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	runtime.GC() // the live heap and the goal are known from the first collection on
	p := &peaks{}
	p.take(t.Context(), srv.URL, os.Getpid())
	m := p.max
	if m.heap <= 0 || m.liveHeap <= 0 || m.heapGoal <= 0 || m.rss <= 0 {
		t.Fatalf("peaks %+v: want every figure above zero", m)
	}
	if m.heapGoal < m.liveHeap {
		t.Errorf("heap goal %.1f MiB below the live heap %.1f MiB", m.heapGoal, m.liveHeap)
	}
}
