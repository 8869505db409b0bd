package manager_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// promScrapeInterval is how often the test's Prometheus scrapes the
// manager: short, so a scenario of a minute leaves enough samples for
// rate() over promRateInterval.
const (
	promScrapeInterval = "1s"
	promRateInterval   = "15s"
)

// prometheusServer is a real Prometheus (bin/prometheus, built by `make
// tools` from hack/tools/prometheus) scraping one target.
type prometheusServer struct {
	*proc
	addr string
}

// startPrometheus runs bin/prometheus scraping the metrics endpoint at
// target, and returns it once it is ready.
func startPrometheus(t *testing.T, target string) *prometheusServer {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run `make tools` to build Prometheus", err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: %s
  evaluation_interval: %s
scrape_configs:
- job_name: millwright-manager
  static_configs:
  - targets: [%q]
`, promScrapeInterval, promScrapeInterval, target)
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &prometheusServer{addr: testenv.FreeAddr(t)}
	s.proc = start(t, "prometheus", bin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+s.addr)
	testenv.Eventually(t, 60*time.Second, "Prometheus to be ready", func() (bool, error) {
		if s.HasExited() {
			t.Fatalf("prometheus exited at start:\n%s", s.LogTail(20))
		}
		code, _, err := testenv.HTTPGet("http://" + s.addr + "/-/ready")
		return code == http.StatusOK, err
	})
	return s
}

// promResponse is the part of the HTTP API's answer the test reads.
type promResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// points runs expr as a range query from start to now, one step a second,
// and counts the points that are numbers (a histogram_quantile of no
// observations is NaN, which a panel shows as nothing).
func (s *prometheusServer) points(expr string, start time.Time) (int, error) {
	q := url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(time.Now().Unix(), 10)},
		"step":  {"1"},
	}
	code, body, err := testenv.HTTPGet("http://" + s.addr + "/api/v1/query_range?" + q.Encode())
	if err != nil {
		return 0, err
	}
	var r promResponse
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return 0, fmt.Errorf("%d %s: %v", code, body, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query %q: %s", expr, r.Error)
	}
	n := 0
	for _, series := range r.Data.Result {
		for _, v := range series.Values {
			s, _ := v[1].(string)
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
				n++
			}
		}
	}
	return n, nil
}

// labelValues returns the values of label on the series of metric, as
// Grafana's label_values(metric, label) asks for them.
func (s *prometheusServer) labelValues(label, metric string) ([]string, error) {
	q := url.Values{"match[]": {metric}}
	code, body, err := testenv.HTTPGet("http://" + s.addr + "/api/v1/label/" + label + "/values?" + q.Encode())
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string   `json:"status"`
		Error  string   `json:"error"`
		Data   []string `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return nil, fmt.Errorf("%d %s: %v", code, body, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("label_values(%s, %s): %s", metric, label, r.Error)
	}
	return r.Data, nil
}

// waitSeen waits until expr has returned data since start: Prometheus has
// scraped what the scenario just did.
func (s *prometheusServer) waitSeen(t *testing.T, start time.Time, expr string) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, "Prometheus to see "+expr, func() (bool, error) {
		n, err := s.points(expr, start)
		return n > 0, err
	})
}
