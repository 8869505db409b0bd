package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// writeRates samples the API server's writes by resource and verb once a
// second (-write-rates FILE): how many of each it served in that second,
// under the scenario running. The manager's client limits each kind of
// object to --kube-api-qps a second; where a kind's writes stay at that
// rate the limit bounds the scenario, and where they fall below it while
// the scenario still runs something else held its writes back.
type writeRates struct {
	mu       sync.Mutex
	scenario string
	rows     []string
}

// mark names the scenario the next samples fall in ("" between them).
func (w *writeRates) mark(scenario string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scenario = scenario
}

// run samples until ctx ends. The seconds on either side of a failed
// read are left out: no sample spans two seconds.
func (w *writeRates) run(ctx context.Context, e *env) {
	prev, err := e.apiServerWrites(ctx)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			cur, cerr := e.apiServerWrites(ctx)
			if err == nil && cerr == nil {
				w.mu.Lock()
				w.rows = append(w.rows, rateRows(now, w.scenario, prev, cur)...)
				w.mu.Unlock()
			}
			prev, err = cur, cerr
		}
	}
}

// rateRows are the CSV rows of one second: "unix seconds,scenario,
// resource[/subresource] VERB,count" for each write counted between prev
// and cur, in the order of their keys.
func rateRows(at time.Time, scenario string, prev, cur map[string]float64) []string {
	keys := make([]string, 0, len(cur))
	for k := range cur {
		if cur[k] > prev[k] && !strings.HasSuffix(k, conflictSuffix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	rows := make([]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, fmt.Sprintf("%d,%s,%s,%g", at.Unix(), scenario, k, cur[k]-prev[k]))
	}
	return rows
}

// write writes the samples to path, with a header.
func (w *writeRates) write(path string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return os.WriteFile(path, []byte("unix_seconds,scenario,request,count\n"+strings.Join(w.rows, "\n")+"\n"), 0o644)
}
