package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// result is one scenario's figures: one JSON object per scenario. The
// first keys are always present (null when they do not apply); the others
// only where they do.
type result struct {
	Scenario         string   `json:"scenario"`
	Machines         int      `json:"machines"`
	Seconds          float64  `json:"seconds"`
	FloorSeconds     *float64 `json:"floor_seconds"`
	RatioToFloor     *float64 `json:"ratio_to_floor"`
	WritesPerMachine *float64 `json:"writes_per_machine"`
	// ReadsPerMachine are the manager's read requests (get, list, watch
	// start: client-go's GETs) over the scenario / N.
	ReadsPerMachine       *float64 `json:"reads_per_machine"`
	DriverCallsPerMachine *float64 `json:"driver_calls_per_machine"`
	ManagerPeakHeap       *float64 `json:"manager_peak_heap_mib"`
	ManagerLiveHeap       *float64 `json:"manager_peak_live_heap_mib"`
	ManagerHeapGoal       *float64 `json:"manager_peak_heap_goal_mib"`
	ManagerRSS            *float64 `json:"manager_rss_mib"`
	ManagerCPUSeconds     *float64 `json:"manager_cpu_seconds"`
	// CPU is where the whole machine's CPU went: every process of the
	// run, and the rest.
	CPU *cpuFigures `json:"cpu,omitempty"`

	IdealSeconds *float64 `json:"ideal_seconds,omitempty"`
	RatioToIdeal *float64 `json:"ratio_to_ideal,omitempty"`
	Waves        int      `json:"waves,omitempty"`
	WaveSeconds  *float64 `json:"wave_seconds,omitempty"` // create latency + the floor of one wave
	// Writes are the manager's API writes over the scenario, by HTTP method.
	Writes map[string]float64 `json:"writes_by_method,omitempty"`
	// Conflicts are those of Writes answered 409 Conflict.
	Conflicts map[string]float64 `json:"manager_conflicts_by_method,omitempty"`
	// APIServerWrites are the API server's writes over the scenario from
	// all clients (manager, sim, kwok, kube-controller-manager, scheduler),
	// by "resource[/subresource] VERB".
	APIServerWrites map[string]float64 `json:"apiserver_writes,omitempty"`
	// APIServerConflicts are those of APIServerWrites the API server
	// answered 409 Conflict: refused, and so written again.
	APIServerConflicts map[string]float64 `json:"apiserver_conflicts,omitempty"`
	// APIServerReads are the API server's reads over the scenario from all
	// clients, by "resource[/subresource] VERB" (GET, LIST, and WATCH for
	// the watches started), and APIServerReadsPerMachine their sums by
	// verb / N.
	APIServerReads           map[string]float64 `json:"apiserver_reads,omitempty"`
	APIServerReadsPerMachine map[string]float64 `json:"apiserver_reads_per_machine,omitempty"`
	// APIServerReadsByClientPerMachine are the same reads by who made
	// them, "client VERB resource" (auditEvent.key), / N, those that
	// round to at least 0.01: only with -audit-reads, from the API
	// server's audit log.
	APIServerReadsByClientPerMachine map[string]float64 `json:"apiserver_reads_by_client_per_machine,omitempty"`
	// QPS and Burst are the client limits of the manager, the sim and the floor.
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// ManagerArgs are the extra manager flags of this run (-manager-args).
	ManagerArgs []string `json:"manager_args,omitempty"`
	// Guards is set when the fleet had a health check and a disruption
	// budget (-guards).
	Guards bool `json:"guards,omitempty"`

	// ReplacementPolicy is the deployment's policy during the scenario,
	// FleetLimit the most Machines it allows (replicas + maxSurge, counted
	// as the policy says) and LargestFleet the largest fleet seen at any
	// Machine event. BoundViolation, when set, is the first event that
	// went over FleetLimit: the run then fails.
	ReplacementPolicy string      `json:"replacement_policy,omitempty"`
	FleetLimit        int         `json:"fleet_limit,omitempty"`
	LargestFleet      *fleetCount `json:"largest_fleet,omitempty"`
	BoundViolation    string      `json:"bound_violation,omitempty"`
	// NodeReadyFlaps are Node Ready → not Ready transitions during the
	// scenario: kwok heartbeats kube-controller-manager found missing.
	NodeReadyFlaps *int64 `json:"node_ready_flaps,omitempty"`
	// NodeReadyWait is how long the Nodes that turned Ready during the
	// scenario waited for kwok after their creation (readyWaits).
	NodeReadyWait *readyWaitFigures `json:"node_ready_wait_seconds,omitempty"`
	// LeasePUTsPerSecond is the API server's Lease PUT rate (kwok's
	// renewals) over the scenario.
	LeasePUTsPerSecond *float64 `json:"lease_puts_per_second,omitempty"`
	// Held is the floor's hold window (-floor-hold).
	Held *heldFloor `json:"hold,omitempty"`
	// RatioToScaleUp (scale-down) is seconds / the scale-up's seconds.
	RatioToScaleUp *float64 `json:"ratio_to_scale_up,omitempty"`
	// Spread (spread) is when a zone ran out and the final spread.
	Spread *spreadFigures `json:"spread,omitempty"`
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
	fmt.Fprintln(tw, "scenario\tpolicy\tmachines\tseconds\tfloor s\t×floor\tideal s\t×ideal\twrites/machine\treads/machine\tAPI GET/LIST/WATCH per machine\tdriver calls/machine\tpeak heap MiB\tlive heap MiB\theap goal MiB\tpeak RSS MiB\tCPU s\tmax Machines\tmax not deleting\tlimit\tReady flaps\t")
	for _, r := range results {
		all, notDeleting, limit := "-", "-", "-"
		if r.LargestFleet != nil {
			all, notDeleting, limit = strconv.Itoa(r.LargestFleet.All), strconv.Itoa(r.LargestFleet.NotDeleting), strconv.Itoa(r.FleetLimit)
		}
		flaps := "-"
		if r.NodeReadyFlaps != nil {
			flaps = strconv.FormatInt(*r.NodeReadyFlaps, 10)
		} else if r.Held != nil {
			flaps = strconv.FormatInt(r.Held.ReadyFlaps, 10)
		}
		policy := r.ReplacementPolicy
		if policy == "" {
			policy = "-"
		}
		if r.Guards {
			policy += " +guards"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, policy, r.Machines, r.Seconds,
			opt(r.FloorSeconds), opt(r.RatioToFloor), opt(r.IdealSeconds), opt(r.RatioToIdeal),
			opt(r.WritesPerMachine), opt(r.ReadsPerMachine), readsByVerb(r.APIServerReadsPerMachine), opt(r.DriverCallsPerMachine), opt(r.ManagerPeakHeap), opt(r.ManagerLiveHeap), opt(r.ManagerHeapGoal), opt(r.ManagerRSS), opt(r.ManagerCPUSeconds),
			all, notDeleting, limit, flaps)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeRatios(w, results)
}

// writeRatios prints, under the table, the ratios docs/benchmarks.md sets
// targets for, each measured in this run.
func writeRatios(w io.Writer, results []*result) error {
	var lines []string
	for _, r := range results {
		switch {
		case r.RatioToIdeal != nil:
			lines = append(lines, fmt.Sprintf("%s (%s): %s× ideal (%.1f s / %s s)", r.Scenario, r.ReplacementPolicy, opt(r.RatioToIdeal), r.Seconds, opt(r.IdealSeconds)))
		case r.Scenario == "scale-up" && r.RatioToFloor != nil:
			lines = append(lines, fmt.Sprintf("scale-up: %s× floor (%.1f s / %s s), %s writes per Machine", opt(r.RatioToFloor), r.Seconds, opt(r.FloorSeconds), opt(r.WritesPerMachine)))
		case r.RatioToScaleUp != nil:
			lines = append(lines, fmt.Sprintf("scale-down: %s× the scale-up's seconds (%.1f s)", opt(r.RatioToScaleUp), r.Seconds))
		case r.Spread != nil:
			f := r.Spread
			lines = append(lines, fmt.Sprintf("spread: %d Machines Running in %.1f s, zone %s out of capacity at %d Running (%.1f s); final Machines/share %s, Spread %s",
				r.Machines, r.Seconds, f.ZoneOut, f.OutAtRunning, f.OutAfterSeconds, zonesLine(f), f.Condition))
		}
		if r.CPU != nil {
			lines = append(lines, fmt.Sprintf("%s CPU: %s", r.Scenario, r.CPU.line()))
		}
		if r.NodeReadyWait != nil {
			lines = append(lines, fmt.Sprintf("%s Node Ready waits (kwok): %s", r.Scenario, r.NodeReadyWait.line()))
		}
		if top := topReads(r.APIServerReadsByClientPerMachine, 0.05); len(top) > 0 {
			lines = append(lines, fmt.Sprintf("%s reads per Machine by client (at least 0.05): %s", r.Scenario, strings.Join(top, ", ")))
		}
		if r.Held != nil {
			lines = append(lines, fmt.Sprintf("floor hold: %d Nodes kept %.1f s, %d Ready flaps, %d not Ready at the end, %.1f Lease PUTs/s, oldest Lease %.1f s",
				r.Machines, r.Held.Seconds, r.Held.ReadyFlaps, r.Held.NotReadyAtEnd, r.Held.LeasePUTsPerSecond, r.Held.OldestLeaseSeconds))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\nratios (same run):\n  %s\n", strings.Join(lines, "\n  "))
	return err
}

// readsByVerb shows the API server's reads per machine as GET/LIST/WATCH.
func readsByVerb(perMachine map[string]float64) string {
	if perMachine == nil {
		return "-"
	}
	f := func(verb string) string { return strconv.FormatFloat(perMachine[verb], 'f', -1, 64) }
	return f("GET") + "/" + f("LIST") + "/" + f("WATCH")
}

func opt(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
