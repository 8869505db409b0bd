package e2e

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/aws"
	"github.com/millwright-dev/millwright/internal/testenv"
)

const (
	// awsBenchNEnv is the fleet size BenchmarkAWSFleet scales to; default 200.
	awsBenchNEnv = "AWS_BENCH_N"
	// awsBenchManagerArgsEnv are extra manager flags, space-separated, such
	// as "--kube-api-qps=500 --kube-api-burst=1000".
	awsBenchManagerArgsEnv = "AWS_BENCH_MANAGER_ARGS"
)

// awsBenchActions are the EC2 actions whose calls the benchmark reports
// per Machine (as counted by the proxy in front of moto: millwright-aws's
// calls only, not the test's nor the kubelets' it plays).
var awsBenchActions = []string{"RunInstances", "DescribeInstances", "TerminateInstances",
	"CreateTags", "DescribeAvailabilityZones", "DescribeSubnets"}

// BenchmarkAWSFleet runs the real manager with millwright-aws against
// moto (TestAWSFleet's setup: moto behind the counting proxy, the test
// playing the instances' kubelets, kwok keeping their Nodes Ready) and
// measures, for a fleet of AWS_BENCH_N Machines (default 200) spread
// over three zones:
//
//   - up-s, created/s: seconds from the MachineDeployment's creation to all
//     N Machines Running (instance running, Node Ready), and N / those
//     seconds;
//   - down-s, terminated/s: seconds from the scale to 0 to every instance
//     of the cluster terminated, and N / those seconds;
//   - driver-calls/machine: the manager's driver calls over both phases,
//     from its millwright_driver_call_duration_seconds_count;
//   - RunInstances/machine, DescribeInstances/machine,
//     TerminateInstances/machine: millwright-aws's EC2 calls over both
//     phases, as the proxy counts them.
//
// It logs a table with the figures per phase, the driver calls by method
// and the manager's API requests per second (against its client limits,
// --kube-api-qps 50 by default; AWS_BENCH_MANAGER_ARGS passes other
// manager flags). docs/benchmarks.md has the figures.
//
//	make bench-aws    # go test -run '^$' -bench BenchmarkAWSFleet -benchtime=1x ./test/e2e/
func BenchmarkAWSFleet(b *testing.B) {
	n := 200
	if v := os.Getenv(awsBenchNEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number of Machines", awsBenchNEnv, v)
		}
	}
	extra := strings.Fields(os.Getenv(awsBenchManagerArgsEnv))
	for i := 0; i < b.N; i++ {
		benchRuns++
		benchAWSFleet(b, n, fmt.Sprintf("awsbench%d-%d", n, benchRuns), extra)
	}
}

// awsPhase is what one phase of BenchmarkAWSFleet measured.
type awsPhase struct {
	name      string
	seconds   float64
	driver    map[string]float64 // driver calls by method
	driverSec map[string]float64 // seconds in driver calls by method
	ec2       map[string]int     // millwright-aws's EC2 calls by action
	requests  float64            // the manager's API requests
	terminate float64            // for the scale-down: seconds to no Machine left
}

func benchAWSFleet(b *testing.B, n int, name string, extra []string) {
	b.StopTimer()
	s := newAWSScenario(b, name)
	w := s.aws
	// The orphan collector and health resync stay at their defaults (15m,
	// 10m): nothing but the fleet's own work is measured.
	m := s.startManager(extra...)
	s.createAWSClass("general", w.awsSpec())

	// Scale-up: the MachineDeployment created with n replicas.
	w.proxy.ResetCounts()
	d0, ds0, r0 := s.driverCalls(m), s.driverSeconds(m), s.apiRequests(m)
	b.StartTimer()
	created := time.Now()
	s.createSpreadDeployment(int32(n), "general")
	s.waitAllRunning(n, 10*time.Minute+time.Duration(n)*time.Second)
	up := awsPhase{name: "scale-up", seconds: time.Since(created).Seconds()}
	b.StopTimer()
	up.driver, up.driverSec, up.requests, up.ec2 = delta(d0, s.driverCalls(m)), delta(ds0, s.driverSeconds(m)), s.apiRequests(m)-r0, ec2Calls(w)
	s.eventually(time.Minute, "the live instances listed", func() (bool, error) {
		ids, err := s.liveInstanceUIDs()
		if err == nil && len(ids) != n {
			b.Errorf("%d live instances of the cluster for %d Running Machines", len(ids), n)
		}
		return err == nil, err
	})

	// Scale-down: replicas 0, until every instance is terminated.
	w.proxy.ResetCounts()
	d0, ds0, r0 = s.driverCalls(m), s.driverSeconds(m), s.apiRequests(m)
	b.StartTimer()
	scaled := time.Now()
	s.scale(0)
	s.eventually(10*time.Minute+time.Duration(n)*time.Second, "every instance terminated", func() (bool, error) {
		ids, err := s.liveInstanceUIDs()
		return err == nil && len(ids) == 0, fmt.Errorf("%d live instances (%v)", len(ids), err)
	})
	down := awsPhase{name: "scale-down", seconds: time.Since(scaled).Seconds()}
	b.StopTimer()
	s.eventually(5*time.Minute, "no Machine left", func() (bool, error) {
		ms, err := s.machines()
		return err == nil && len(ms) == 0, fmt.Errorf("%d Machines (%v)", len(ms), err)
	})
	down.terminate = time.Since(scaled).Seconds()
	down.driver, down.driverSec, down.requests, down.ec2 = delta(d0, s.driverCalls(m)), delta(ds0, s.driverSeconds(m)), s.apiRequests(m)-r0, ec2Calls(w)

	perMachine := func(f func(awsPhase) float64) float64 { return (f(up) + f(down)) / float64(n) }
	b.ReportMetric(up.seconds, "up-s")
	b.ReportMetric(float64(n)/up.seconds, "created/s")
	b.ReportMetric(down.seconds, "down-s")
	b.ReportMetric(float64(n)/down.seconds, "terminated/s")
	b.ReportMetric(perMachine(func(p awsPhase) float64 { return sum(p.driver) }), "driver-calls/machine")
	for _, a := range awsBenchActions[:3] {
		b.ReportMetric(perMachine(func(p awsPhase) float64 { return float64(p.ec2[a]) }), a+"/machine")
	}

	var t strings.Builder
	fmt.Fprintf(&t, "%d Machines (3 zones, on-demand t3.micro, moto), manager flags %q:\n", n, extra)
	fmt.Fprintf(&t, "%-12s %9s %11s %14s %14s", "phase", "seconds", "instances/s", "driver calls/M", "API req/s")
	for _, a := range awsBenchActions {
		fmt.Fprintf(&t, " %s/M", a)
	}
	t.WriteString("\n")
	for _, p := range []awsPhase{up, down} {
		fmt.Fprintf(&t, "%-12s %9.1f %11.1f %14.2f %14.1f", p.name, p.seconds, float64(n)/p.seconds, sum(p.driver)/float64(n), p.requests/p.seconds)
		for _, a := range awsBenchActions {
			fmt.Fprintf(&t, " %*.2f", len(a)+2, float64(p.ec2[a])/float64(n))
		}
		t.WriteString("\n")
	}
	fmt.Fprintf(&t, "scale-down: no Machine left after %.1f s\n", down.terminate)
	for _, p := range []awsPhase{up, down} {
		fmt.Fprintf(&t, "%s driver calls per Machine by method (mean seconds a call):", p.name)
		for _, method := range sortedKeys(p.driver) {
			fmt.Fprintf(&t, " %s %.2f (%.2f s)", method, p.driver[method]/float64(n), p.driverSec[method]/p.driver[method])
		}
		t.WriteString("\n")
	}
	b.Logf("%s", t.String())
}

// waitAllRunning waits until the scenario has exactly n Machines, none
// deleting, every one Running (the manager saw its Node Ready). It lists
// the Machines once a poll, and does not Get each Node as waitFleet does:
// at hundreds of Machines that would load the API server it measures.
func (s *scenario) waitAllRunning(n int, bound time.Duration) {
	s.t.Helper()
	s.eventually(bound, fmt.Sprintf("%d Machines Running", n), func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		running := 0
		for i := range ms {
			if ms[i].DeletionTimestamp == nil && ms[i].Status.Phase == v1alpha1.PhaseRunning {
				running++
			}
		}
		return len(ms) == n && running == n, fmt.Errorf("%d Machines, %d Running", len(ms), running)
	})
}

// liveInstanceUIDs are the Machine UIDs of the cluster's live instances
// (pending, running, stopping, stopped), one entry per instance, asked of
// moto directly (not counted by the proxy). It filters by the cluster tag
// only, as the kubelets do: moto answered a state filter with a 500 while
// instances were terminating.
func (s *scenario) liveInstanceUIDs() ([]string, error) {
	ins, err := s.aws.instances(s.aws.cluster)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range ins {
		if live(in) {
			out = append(out, tagOf(in, aws.TagMachineUID))
		}
	}
	return out, nil
}

// driverCalls are the manager's driver calls so far by method, from
// millwright_driver_call_duration_seconds_count (every provider and code).
func (s *scenario) driverCalls(m *manager) map[string]float64 {
	s.t.Helper()
	out := map[string]float64{}
	for labels, v := range s.samples(m, "millwright_driver_call_duration_seconds_count") {
		out[labelOf(labels, "method")] += v
	}
	return out
}

// driverSeconds are the seconds the manager spent in driver calls so far
// by method, from millwright_driver_call_duration_seconds_sum.
func (s *scenario) driverSeconds(m *manager) map[string]float64 {
	s.t.Helper()
	out := map[string]float64{}
	for labels, v := range s.samples(m, "millwright_driver_call_duration_seconds_sum") {
		out[labelOf(labels, "method")] += v
	}
	return out
}

// apiRequests are the manager's requests to the API server so far
// (client-go's rest_client_requests_total, every method and code).
func (s *scenario) apiRequests(m *manager) float64 {
	s.t.Helper()
	var total float64
	for _, v := range s.samples(m, "rest_client_requests_total") {
		total += v
	}
	return total
}

// samples are the manager's samples of metric by their label set.
func (s *scenario) samples(m *manager, metric string) map[string]float64 {
	s.t.Helper()
	code, body, err := testenv.HTTPGet("http://" + m.metrics + "/metrics")
	if err != nil || code != 200 {
		s.t.Fatalf("%s's /metrics: %d %v", m.name, code, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, metric+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			s.t.Fatalf("%s: %v", line, err)
		}
		out[labels] += v
	}
	return out
}

// labelOf is the value of label name in a sample's label set.
func labelOf(labels, name string) string {
	for _, pair := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(pair, name+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func ec2Calls(w *awsWorld) map[string]int {
	out := map[string]int{}
	for _, a := range awsBenchActions {
		out[a] = w.proxy.Calls(a)
	}
	return out
}

func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func sum(m map[string]float64) float64 {
	var total float64
	for _, v := range m {
		total += v
	}
	return total
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
