package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// vmBenchSizesEnv lists the fleet sizes BenchmarkVMCreateToRunning
// measures, comma-separated; default "1,4" (this project's shared 2-core
// machine runs at most 4 TCG VMs at once).
const vmBenchSizesEnv = "VM_BENCH_SIZES"

// BenchmarkVMCreateToRunning measures real VMs (libvirt, TCG, 1 vCPU,
// 256Mi, the node agent) from a MachineDeployment's scale-up to Running,
// for fleets of each size of VM_BENCH_SIZES created at once: create →
// Running seconds (p50, p95 over the VMs of all iterations), where the
// time goes (from the API objects' timestamps, one-second resolution:
// Machine created → CSR posted (VM created, booted, network up, agent
// started), → CSR approved by kube-controller-manager, → Node registered,
// → Node Ready, → Machine Running), and each QEMU's CPU seconds and
// resident memory at Running. docs/benchmarks.md has the figures.
//
//	make bench-vm    # go test -run '^$' -bench BenchmarkVMCreateToRunning -benchtime=3x ./test/e2e/
func BenchmarkVMCreateToRunning(b *testing.B) {
	sizes := []int{1, 4}
	if v := os.Getenv(vmBenchSizesEnv); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want sizes like 1,5", vmBenchSizesEnv, v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("vms=%d", n), func(b *testing.B) { benchFleet(b, n) })
	}
}

// vmTimes is where one VM's create → Running went, in seconds.
type vmTimes struct {
	toCSR, toApproved, toNode, toReady, toRunning float64
	cpu, rssMiB                                   float64
}

// benchRuns counts benchFleet's runs: the testing package runs a
// benchmark more than once (b.N = 1 first), and a deleted namespace lingers.
var benchRuns int

func benchFleet(b *testing.B, n int) {
	benchRuns++
	s := newVMScenario(b, fmt.Sprintf("vmbench%d-%d", n, benchRuns))
	s.startManager("--token-bootstrap-api-server", vmAPIServer(b))
	s.createVMClass("small", smallVM)
	s.createTokenBootstrapTemplate("join")
	rec := s.record()
	s.createDeploymentOf(0, vmMachineSpec("small", "join"), n, 0)
	var all []vmTimes
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.scale(int32(n))
		fleet := s.waitFleet(n, "small", 10*time.Minute)
		b.StopTimer()
		for _, m := range fleet {
			all = append(all, s.vmTimes(rec, &m))
		}
		s.scale(0)
		s.waitFleet(0, "small", 5*time.Minute)
		b.StartTimer()
	}
	b.StopTimer()
	col := func(f func(vmTimes) float64) []float64 {
		var out []float64
		for _, t := range all {
			out = append(out, f(t))
		}
		slices.Sort(out)
		return out
	}
	running := col(func(t vmTimes) float64 { return t.toRunning })
	b.ReportMetric(percentile(running, 50), "s-p50")
	b.ReportMetric(percentile(running, 95), "s-p95")
	b.ReportMetric(mean(col(func(t vmTimes) float64 { return t.cpu })), "cpu-s/vm")
	b.ReportMetric(mean(col(func(t vmTimes) float64 { return t.rssMiB })), "rss-MiB/vm")
	b.Logf("%d VMs at once, %d VMs measured; median seconds after the Machine's creation: CSR posted %.0f, approved %.0f, Node registered %.0f, Node Ready %.0f, Machine Running %.1f",
		n, len(all), percentile(col(func(t vmTimes) float64 { return t.toCSR }), 50), percentile(col(func(t vmTimes) float64 { return t.toApproved }), 50),
		percentile(col(func(t vmTimes) float64 { return t.toNode }), 50), percentile(col(func(t vmTimes) float64 { return t.toReady }), 50),
		percentile(running, 50))
}

// vmTimes reads where a Running Machine's time went, and its QEMU's CPU
// time and RSS now.
func (s *scenario) vmTimes(rec *recorder, m *v1alpha1.Machine) vmTimes {
	s.t.Helper()
	ctx := context.Background()
	t0 := m.CreationTimestamp.Time
	since := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	var out vmTimes
	for _, v := range rec.versionsOf(m.Name) {
		if v.phase == v1alpha1.PhaseRunning {
			out.toRunning = since(v.seen)
			break
		}
	}
	node := &corev1.Node{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: nodeOf(m)}, node); err != nil {
		s.t.Fatal(err)
	}
	out.toNode = since(node.CreationTimestamp.Time)
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.toReady = since(c.LastTransitionTime.Time)
		}
	}
	csrs := &certificatesv1.CertificateSigningRequestList{}
	if err := k8s.List(ctx, csrs); err != nil {
		s.t.Fatal(err)
	}
	for _, c := range csrs.Items {
		if csrCommonName(&c) != "system:node:"+node.Name {
			continue
		}
		out.toCSR = since(c.CreationTimestamp.Time)
		for _, cond := range c.Status.Conditions {
			if cond.Type == certificatesv1.CertificateApproved {
				out.toApproved = since(cond.LastUpdateTime.Time)
			}
		}
	}
	dom, err := s.vm.domainOf(m.Name)
	if err != nil {
		s.t.Fatal(err)
	}
	out.cpu, out.rssMiB = qemuUsage(s.t, dom.name)
	return out
}

// qemuUsage is a running domain's QEMU's CPU seconds (user and system)
// and resident memory in MiB.
func qemuUsage(t testing.TB, domain string) (cpu, rssMiB float64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(qemuPIDDir, domain+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(data))
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's closing parenthesis: utime and stime are
	// the 12th and 13th, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 64)
			rssMiB = v / 1024
		}
	}
	return (utime + stime) / 100, rssMiB
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	return sorted[max(0, min(i-1, len(sorted)-1))]
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}
