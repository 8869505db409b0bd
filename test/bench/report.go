package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// result is one scenario's figures: one JSON object per scenario. The
// first keys are always present (null when they do not apply); the others
// only where they do.
type result struct {
	Scenario              string   `json:"scenario"`
	Machines              int      `json:"machines"`
	Seconds               float64  `json:"seconds"`
	FloorSeconds          *float64 `json:"floor_seconds"`
	RatioToFloor          *float64 `json:"ratio_to_floor"`
	WritesPerMachine      *float64 `json:"writes_per_machine"`
	DriverCallsPerMachine *float64 `json:"driver_calls_per_machine"`
	ManagerPeakHeap       *float64 `json:"manager_peak_heap_mib"`
	ManagerRSS            *float64 `json:"manager_rss_mib"`
	ManagerCPUSeconds     *float64 `json:"manager_cpu_seconds"`

	IdealSeconds *float64 `json:"ideal_seconds,omitempty"`
	RatioToIdeal *float64 `json:"ratio_to_ideal,omitempty"`
	Waves        int      `json:"waves,omitempty"`
	WaveSeconds  *float64 `json:"wave_seconds,omitempty"` // create latency + the floor of one wave
	// Writes are the manager's API writes over the scenario, by HTTP method.
	Writes map[string]float64 `json:"writes_by_method,omitempty"`
	// APIServerWrites are the API server's writes over the scenario from
	// all clients (manager, sim, kwok, kube-controller-manager, scheduler),
	// by "resource[/subresource] VERB".
	APIServerWrites map[string]float64 `json:"apiserver_writes,omitempty"`
	// QPS and Burst are the client limits of the manager, the sim and the floor.
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// ManagerArgs are the extra manager flags of this run (-manager-args).
	ManagerArgs []string `json:"manager_args,omitempty"`
}

func writeJSON(w io.Writer, results []*result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func writeTable(w io.Writer, results []*result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tmachines\tseconds\tfloor s\t×floor\tideal s\t×ideal\twrites/machine\tdriver calls/machine\tpeak heap MiB\tpeak RSS MiB\tCPU s\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, r.Machines, r.Seconds,
			opt(r.FloorSeconds), opt(r.RatioToFloor), opt(r.IdealSeconds), opt(r.RatioToIdeal),
			opt(r.WritesPerMachine), opt(r.DriverCallsPerMachine), opt(r.ManagerPeakHeap), opt(r.ManagerRSS), opt(r.ManagerCPUSeconds))
	}
	return tw.Flush()
}

func opt(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
