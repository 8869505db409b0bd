// Command bench is Millwright's scale benchmark (`make bench`): on a local
// cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kwok) with the sim and the manager as separate processes, it measures
// the floor (the unavoidable writes for N machines), a scale-up from 0 to
// N Running Machines, the manager at rest, a rolling update to another
// MachineClass, a scale-down to 0 and a scale-up spread over three zones
// of which one runs out of capacity halfway. It prints one JSON object per
// scenario, then a table, on stdout; progress goes to stderr.
// docs/benchmarks.md says what each figure means.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/repo"
)

// allScenarios, in the order they run: each later one uses the fleet the
// earlier ones left.
var allScenarios = []string{"floor", "scale-up", "steady-state", "rolling-update", "rolling-update-started", "scale-down", "spread"}

// bench holds what the scenarios share.
type bench struct {
	e         *env
	o         *observer
	timeout   time.Duration
	steadyFor time.Duration
	// replicas and policy are the deployment's spec.replicas and
	// replacement policy as the benchmark last set them.
	replicas int
	policy   string
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func main() {
	n := flag.Int("n", 1000, "machines")
	scenarios := flag.String("scenarios", strings.Join(allScenarios, ","), "comma-separated scenarios to run, from: "+strings.Join(allScenarios, ", "))
	steady := flag.Duration("steady", 2*time.Minute, "how long steady-state watches the idle manager")
	out := flag.String("out", "", "also write the JSON objects, one per line, to this file")
	keep := flag.Bool("keep", false, "keep the cluster's directory (logs, data) after the run")
	qps := flag.Float64("qps", 50, "API client QPS of the manager, the sim and the floor (the manager's default)")
	burst := flag.Int("burst", 100, "API client burst of the manager, the sim and the floor (the manager's default)")
	timeout := flag.Duration("timeout", 0, "bound of each scenario (default: 10m + 1s per machine)")
	managerArgs := flag.String("manager-args", "", "extra flags for millwright-manager, space-separated (e.g. \"--machine-workers=100\"), to see what a setting changes")
	policy := flag.String("replacement-policy", policyComplete, "the MachineDeployment's spec.strategy.rollingUpdate.replacementPolicy ("+policyComplete+" or "+policyStarted+"), for every scenario but rolling-update-started")
	heartbeats := flag.String("node-heartbeats", "auto", "kwok's Leases and workers, and kube-controller-manager's grace period: auto (chosen from -n, docs/benchmarks.md) or default (kwok's and the controller manager's defaults, to compare)")
	timelineOut := flag.String("timeline", "", "write Machines per MachineSet over time to this CSV file (the data of docs/images/rollout-timeline.svg: see docs/rollout.md)")
	writeRatesOut := flag.String("write-rates", "", "write the API server's writes by resource and verb, each second, to this CSV file (where a kind's writes stay at the manager's --kube-api-qps, that limit bounds the scenario)")
	bin := flag.String("bin", "", "directory of every binary the run starts (kube-apiserver and the rest, millwright-sim, millwright-manager; default: the repository's bin/), e.g. to compare two builds of the manager")
	withGuards := flag.Bool("guards", false, "give the fleet a MachineHealthCheck and a MachineDisruptionBudget (the check never remediates, the budget grants the deletions; their controllers' work is in the figures), as a production fleet has them")
	auditReads := flag.Bool("audit-reads", false, "have kube-apiserver log every read request and report each scenario's reads per Machine by client (costs the API server CPU: its times are not comparable with runs without it)")
	floorHold := flag.Duration("floor-hold", 0, "keep the floor's Ready Nodes this long and count Ready flaps and Lease PUTs (tests kwok's heartbeats at -n)")
	flag.Parse()
	// The observer's informers log through controller-runtime; their
	// retries are not the benchmark's output.
	ctrllog.SetLogger(logr.Discard())

	want := strings.Split(*scenarios, ",")
	for _, s := range want {
		if !slices.Contains(allScenarios, s) {
			fmt.Fprintf(os.Stderr, "unknown scenario %q; known: %s\n", s, strings.Join(allScenarios, ", "))
			os.Exit(2)
		}
	}
	if *policy != policyComplete && *policy != policyStarted {
		fmt.Fprintf(os.Stderr, "-replacement-policy must be %s or %s\n", policyComplete, policyStarted)
		os.Exit(2)
	}
	if *heartbeats != "auto" && *heartbeats != "default" {
		fmt.Fprintln(os.Stderr, "-node-heartbeats must be auto or default")
		os.Exit(2)
	}
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "-n must be at least 1")
		os.Exit(2)
	}
	if *timeout <= 0 {
		*timeout = 10*time.Minute + time.Duration(*n)*time.Second
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := run(ctx, config{n: *n, scenarios: want, steady: *steady, keep: *keep, qps: float32(*qps), burst: *burst, timeout: *timeout, managerArgs: strings.Fields(*managerArgs), policy: *policy, floorHold: *floorHold, defaultHeartbeats: *heartbeats == "default", timeline: *timelineOut, writeRates: *writeRatesOut, bin: *bin, guards: *withGuards, auditReads: *auditReads})
	if len(results) > 0 {
		_ = writeJSON(os.Stdout, results)
		fmt.Println()
		_ = writeTable(os.Stdout, results)
		if *out != "" {
			f, ferr := os.Create(*out)
			if ferr == nil {
				ferr = writeJSON(f, results)
				if cerr := f.Close(); ferr == nil {
					ferr = cerr
				}
			}
			if ferr != nil {
				logf("writing %s: %v", *out, ferr)
			}
		}
	}
	if err != nil {
		logf("bench: %v", err)
		os.Exit(1)
	}
}

type config struct {
	n         int
	scenarios []string
	steady    time.Duration
	keep      bool
	qps       float32
	burst     int
	timeout   time.Duration
	// managerArgs are added to the manager's command line.
	managerArgs []string
	// policy is the deployment's replacement policy (rolling-update-started
	// sets TerminationStarted).
	policy string
	// floorHold keeps the floor's Nodes that long after they are Ready.
	floorHold time.Duration
	// defaultHeartbeats keeps kwok's and kube-controller-manager's
	// defaults whatever n.
	defaultHeartbeats bool
	// timeline is the CSV file to write Machines per MachineSet over
	// time to; empty: none.
	timeline string
	// writeRates is the CSV file to write the API server's writes per
	// second to (writeRates); "" writes none.
	writeRates string
	// bin is the directory of the binaries; empty: the repository's bin/.
	bin string
	// guards gives the fleet a health check and a disruption budget.
	guards bool
	// auditReads has the API server log its reads, counted by client.
	auditReads bool
}

// run starts everything, runs the scenarios asked for and stops
// everything; it returns the results of the scenarios that finished.
func run(ctx context.Context, cfg config) (results []*result, err error) {
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	dir := ""
	if cfg.keep {
		if dir, err = os.MkdirTemp("", "millwright-bench-"); err != nil {
			return nil, err
		}
	}
	logf("starting the local cluster (%d machines; scenarios %s)", cfg.n, strings.Join(cfg.scenarios, ","))
	hb := localcluster.HeartbeatsFor(cfg.n)
	if cfg.defaultHeartbeats {
		hb = localcluster.NodeHeartbeats{}
	}
	logf("node heartbeats for %d Nodes: %s (%.0f Lease PUTs/s)", cfg.n, describeHeartbeats(hb), hb.LeasePUTsPerSecond(cfg.n))
	bin := cfg.bin
	if bin == "" {
		bin = filepath.Join(root, "bin")
	}
	e, err := startCluster(ctx, root, bin, dir, hb, cfg.auditReads, cfg.qps, cfg.burst)
	if e != nil {
		e.managerArgs, e.guards = cfg.managerArgs, cfg.guards
	}
	defer e.stop(cfg.keep)
	if err != nil {
		return nil, err
	}
	if slices.Contains(cfg.scenarios, "rolling-update-started") || cfg.policy == policyStarted {
		ok, err := e.apiHasPolicy(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%s needs spec.strategy.rollingUpdate.replacementPolicy, which this build's MachineDeployment CRD lacks (the API server prunes it): leave rolling-update-started out of -scenarios, or build with the API change", policyStarted)
		}
	}
	obsCtx, cancelObs := context.WithCancel(ctx)
	defer cancelObs()
	o, err := e.startObserver(obsCtx)
	if err != nil {
		return nil, err
	}
	if cfg.timeline != "" {
		o.timeline = newTimeline()
		defer func() {
			if err := o.timeline.write(cfg.timeline); err != nil {
				logf("writing %s: %v", cfg.timeline, err)
			}
		}()
	}
	var rates *writeRates
	if cfg.writeRates != "" {
		rates = &writeRates{}
		go rates.run(obsCtx, e)
		defer func() {
			if err := rates.write(cfg.writeRates); err != nil {
				logf("writing %s: %v", cfg.writeRates, err)
			}
		}()
	}
	b := &bench{e: e, o: o, timeout: cfg.timeout, steadyFor: cfg.steady, policy: cfg.policy}
	has := func(s string) bool { return slices.Contains(cfg.scenarios, s) }

	// The floor runs before the manager starts, on an empty cluster, so
	// neither disturbs the other's figures.
	var floor *float64
	if has("floor") {
		logf("floor: %d Machines and %d kwok Nodes", cfg.n, cfg.n)
		f, err := e.floor(ctx, o, cfg.n, "n", cfg.timeout, cfg.floorHold)
		if err != nil {
			return results, err
		}
		floor = num(round(f.seconds, 1))
		w := 2.0 // one Machine and one Node create per machine, by construction
		results = append(results, &result{Scenario: "floor", Machines: cfg.n, Seconds: *floor, FloorSeconds: floor,
			RatioToFloor: num(1), WritesPerMachine: &w, QPS: cfg.qps, Burst: cfg.burst, Held: f.held, CPU: f.cpu})
		if held := f.held; held != nil && (held.ReadyFlaps > 0 || held.NotReadyAtEnd > 0) {
			logf("!!! kwok did not keep the floor's %d Nodes Ready: %d Ready flaps, %d not Ready at the end", cfg.n, held.ReadyFlaps, held.NotReadyAtEnd)
		}
	}

	logf("starting millwright-sim and millwright-manager")
	if err := e.startMillwright(ctx); err != nil {
		return results, err
	}
	if err := e.createClasses(ctx); err != nil {
		return results, err
	}
	if cfg.guards {
		logf("creating the fleet's MachineHealthCheck and MachineDisruptionBudget (maxUnavailable %d%%)", budgetPercent)
		if err := e.createGuards(ctx); err != nil {
			return results, err
		}
	}
	fleetUp := false
	ensureFleet := func() error { // for a run that skips scale-up but needs a fleet
		if fleetUp {
			return nil
		}
		logf("bringing up the fleet of %d Machines (not measured)", cfg.n)
		_, err := b.scaleUp(ctx, cfg.n)
		fleetUp = err == nil
		return err
	}
	step := func(name string, f func(context.Context, int) (*result, error)) error {
		if !has(name) {
			return nil
		}
		if name != "scale-up" {
			if err := ensureFleet(); err != nil {
				return err
			}
		}
		logf("%s: %d machines", name, cfg.n)
		rates.mark(name)
		r, err := f(ctx, cfg.n)
		rates.mark("")
		if r != nil && err != nil {
			results = append(results, r) // a bound violation: its figures say by how much
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		logf("%s: done in %.1fs", name, r.Seconds)
		results = append(results, r)
		return nil
	}
	if err := step("scale-up", func(ctx context.Context, n int) (*result, error) {
		r, err := b.scaleUp(ctx, n)
		fleetUp = err == nil
		e.logEventReasons(ctx)
		if err == nil && floor != nil {
			r.FloorSeconds, r.RatioToFloor = floor, num(round(r.Seconds / *floor, 2))
		}
		return r, err
	}); err != nil {
		return results, err
	}
	var scaleUpSeconds *float64
	if len(results) > 0 && results[len(results)-1].Scenario == "scale-up" {
		scaleUpSeconds = &results[len(results)-1].Seconds
	}
	for _, s := range []struct {
		name string
		f    func(context.Context, int) (*result, error)
	}{
		{"steady-state", b.steady},
		{"rolling-update", func(ctx context.Context, n int) (*result, error) {
			return b.rollingUpdate(ctx, "rolling-update", n, classSlow, cfg.policy)
		}},
		{"rolling-update-started", func(ctx context.Context, n int) (*result, error) {
			return b.rollingUpdate(ctx, "rolling-update-started", n, classSlowB, policyStarted)
		}},
		{"scale-down", func(ctx context.Context, n int) (*result, error) {
			r, err := b.scaleDown(ctx, n)
			if r != nil && scaleUpSeconds != nil && *scaleUpSeconds > 0 {
				r.RatioToScaleUp = num(round(r.Seconds / *scaleUpSeconds, 2))
			}
			return r, err
		}},
	} {
		if err := step(s.name, s.f); err != nil {
			return results, err
		}
	}
	if has("spread") { // a deployment of its own: not the fleet the others share
		logf("spread: %d machines over %d zones", cfg.n, len(spreadZones))
		r, err := b.spread(ctx, cfg.n)
		if r != nil {
			results = append(results, r)
		}
		if err != nil {
			return results, fmt.Errorf("spread: %w", err)
		}
		logf("spread: done in %.1fs", r.Seconds)
	}
	return results, nil
}
