package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// writeMethods are the HTTP methods that change objects; GET (get, list,
// watch) only reads.
var writeMethods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// readMethod is the HTTP method of every read: a get, a list and the
// start of a watch (client-go counts a watch when its response begins).
const readMethod = "GET"

// counters are the manager's cumulative figures at one moment.
type counters struct {
	at          time.Time
	writes      map[string]float64 // rest_client_requests_total by write method
	conflicts   map[string]float64 // the same, answered 409 Conflict
	reads       float64            // rest_client_requests_total, method GET
	driverCalls float64            // millwright_driver_call_duration_seconds_count, all labels
	cpuSeconds  float64            // /proc/<pid>/stat utime+stime
	// apiWrites are the API server's write requests from all clients, by
	// "resource[/subresource] VERB": not the manager's alone, but the only
	// per-resource view there is.
	apiWrites map[string]float64
	// apiReads are the API server's read requests from all clients, by
	// "resource[/subresource] VERB" with VERB GET, LIST or WATCH; a
	// WATCH's figure counts the watches started so far (see
	// apiServerRequests).
	apiReads map[string]float64
}

func (c counters) totalWrites() float64 {
	var n float64
	for _, v := range c.writes {
		n += v
	}
	return n
}

// sample is one scrape of the manager's metrics, as name{labels} -> value.
type sample []metricLine

type metricLine struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapeClient asks for /metrics uncompressed. Go's default transport
// asks for gzip, and the manager's metrics handler keeps its gzip writers
// in a pool (about 1 MiB of compressor state each): scraped every second
// by peaks, one stayed live through every collection and counted in the
// heap the benchmark measures, twice over at GOGC=100 (docs/benchmarks.md,
// "What the benchmark costs itself").
var scrapeClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// scrape reads the manager's /metrics in the Prometheus text format. The
// parser handles what client_golang writes (no escaped quotes in the
// labels we read), which keeps the benchmark off modules go.mod does not
// already require directly.
func scrape(ctx context.Context, url string) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	var s sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if l, ok := parseLine(sc.Text()); ok {
			s = append(s, l)
		}
	}
	return s, sc.Err()
}

func parseLine(line string) (metricLine, bool) {
	if line == "" || line[0] == '#' {
		return metricLine{}, false
	}
	var l metricLine
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return metricLine{}, false
		}
		l.name, rest = line[:i], strings.TrimSpace(line[j+1:])
		l.labels = map[string]string{}
		for _, kv := range strings.Split(line[i+1:j], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				l.labels[strings.TrimSpace(k)] = strings.Trim(v, `"`)
			}
		}
	} else {
		f := strings.Fields(line)
		if len(f) < 2 {
			return metricLine{}, false
		}
		l.name, rest = f[0], f[1]
	}
	v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
	if err != nil {
		return metricLine{}, false
	}
	l.value = v
	return l, true
}

// sum adds the values of name whose labels pass keep (nil: all).
func (s sample) sum(name string, keep func(map[string]string) bool) float64 {
	var n float64
	for _, l := range s {
		if l.name == name && (keep == nil || keep(l.labels)) {
			n += l.value
		}
	}
	return n
}

// readCounters scrapes the manager, its /proc entry and the API server.
func (e *env) readCounters(ctx context.Context) (counters, error) {
	s, err := scrape(ctx, e.metricsURL)
	if err != nil {
		return counters{}, err
	}
	pid := e.managerPID()
	c := counters{at: time.Now(), writes: map[string]float64{}, conflicts: map[string]float64{}}
	for _, l := range s {
		if l.name != "rest_client_requests_total" {
			continue
		}
		if method := l.labels["method"]; writeMethods[method] {
			c.writes[method] += l.value
			if l.labels["code"] == "409" {
				c.conflicts[method] += l.value
			}
		} else if method == readMethod {
			c.reads += l.value
		}
	}
	c.driverCalls = s.sum("millwright_driver_call_duration_seconds_count", nil)
	if c.cpuSeconds, err = procCPUSeconds(pid); err != nil {
		return c, err
	}
	c.apiWrites, c.apiReads, err = e.apiServerRequests(ctx)
	return c, err
}

// apiServerWrites reads the API server's writes by resource (see
// parseAPIServerRequests).
func (e *env) apiServerWrites(ctx context.Context) (map[string]float64, error) {
	w, _, err := e.apiServerRequests(ctx)
	return w, err
}

// apiServerRequests reads the API server's writes and reads by resource
// (see parseAPIServerRequests).
func (e *env) apiServerRequests(ctx context.Context) (writes, reads map[string]float64, err error) {
	data, err := e.clientset.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	writes, reads = parseAPIServerRequests(string(data))
	return writes, reads, nil
}

// parseAPIServerRequests reads, from the API server's metrics text, its
// requests by "resource[/subresource] VERB": the writes, with under
// "… VERB 409" those answered Conflict (see conflictSuffix), and the
// reads of resources (GET, LIST, WATCH).
//
// apiserver_request_total counts a request when it ends, so a watch only
// when it closes; the watches still open are in the gauge
// apiserver_longrunning_requests. Their sum is every watch started since
// the API server did, so its difference over a scenario is the watches
// started in it.
func parseAPIServerRequests(metrics string) (writes, reads map[string]float64) {
	writes, reads = map[string]float64{}, map[string]float64{}
	for _, line := range strings.Split(metrics, "\n") {
		l, ok := parseLine(line)
		if !ok {
			continue
		}
		verb := l.labels["verb"]
		key := resourceKey(l.labels["resource"], l.labels["subresource"])
		switch {
		case l.name == "apiserver_request_total" && apiWriteVerbs[verb]:
			writes[key+" "+verb] += l.value
			if l.labels["code"] == "409" {
				writes[key+" "+verb+conflictSuffix] += l.value
			}
		case l.labels["resource"] == "": // /metrics, /healthz, …: not an object read
		case l.name == "apiserver_request_total" && apiReadVerbs[verb],
			l.name == "apiserver_longrunning_requests" && verb == "WATCH":
			reads[key+" "+verb] += l.value
		}
	}
	return writes, reads
}

// resourceKey names what a request was for, "resource[/subresource]", as
// every figure of the API server's requests names it.
func resourceKey(resource, subresource string) string {
	if subresource == "" {
		return resource
	}
	return resource + "/" + subresource
}

// apiReadVerbs are the API server's verbs that read objects.
var apiReadVerbs = map[string]bool{"GET": true, "LIST": true, "WATCH": true}

// conflictSuffix marks, in apiServerWrites' keys, the writes the API
// server refused with a Conflict (a resourceVersion precondition lost):
// each one is a write some controller must make again.
const conflictSuffix = " 409"

// apiWriteVerbs are the API server's verbs that write.
var apiWriteVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procCPUSeconds is the user plus system CPU time of a process.
func procCPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis. utime and stime are fields 14 and 15,
	// so 12 and 13 after it.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return (utime + stime) / clockTicks, nil
}

// procRSSMiB returns a process's resident set size now (VmRSS) in MiB.
func procRSSMiB(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// peaks samples the manager's heap and RSS about every second, because
// they are gauges whose maximum between two scrapes would otherwise be
// lost.
type peaks struct {
	mu     sync.Mutex
	max    memory
	cancel context.CancelFunc
	done   chan struct{}
}

// memory is what peaks keeps, in MiB: the heap allocated
// (go_memstats_heap_alloc_bytes, live objects and the garbage not yet
// collected), the heap the last collection found live
// (go_gc_heap_live_bytes: the first without the collector's headroom,
// which GOGC=100 lets grow to as much again), the heap the runtime lets
// grow before its next collection (go_gc_heap_goal_bytes: what the
// allocated heap nears just before each collection, a top a sample once a
// second mostly misses) and the RSS.
type memory struct {
	heap, liveHeap, heapGoal, rss float64
}

func startPeaks(ctx context.Context, metricsURL string, pid int) *peaks {
	ctx, cancel := context.WithCancel(ctx)
	p := &peaks{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			p.take(ctx, metricsURL, pid)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peaks) take(ctx context.Context, metricsURL string, pid int) {
	var m memory
	if s, err := scrape(ctx, metricsURL); err == nil {
		m.heap = s.sum("go_memstats_heap_alloc_bytes", nil) / (1 << 20)
		m.liveHeap = s.sum("go_gc_heap_live_bytes", nil) / (1 << 20)
		m.heapGoal = s.sum("go_gc_heap_goal_bytes", nil) / (1 << 20)
	}
	if rss, err := procRSSMiB(pid); err == nil {
		m.rss = rss
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.max = memory{max(p.max.heap, m.heap), max(p.max.liveHeap, m.liveHeap), max(p.max.heapGoal, m.heapGoal), max(p.max.rss, m.rss)}
}

// stop ends the sampling and returns the largest of each figure sampled.
func (p *peaks) stop() memory {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max
}
