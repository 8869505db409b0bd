package main

import (
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	text := "cpu  1000 50 300 8000 100 20 30 0 0 0\ncpu0 500 25 150 4000 50 10 15 0 0 0\nintr 1\n"
	busy, total, err := parseProcStat(text)
	if err != nil {
		t.Fatal(err)
	}
	// busy: 1000+50+300+20+30+0 ticks; total adds idle 8000 and iowait 100.
	if busy != 14 || total != 95 {
		t.Errorf("busy, total = %g, %g s; want 14, 95 (the all-CPU line, not cpu0's)", busy, total)
	}
	for _, bad := range []string{"", "intr 1\n", "cpu  1 2 x 4 5 6 7 8 9 10\n"} {
		if _, _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q): no error", bad)
		}
	}
}

func TestCPUSinceSplitsTheMachine(t *testing.T) {
	start := cpuSnapshot{procs: map[string]float64{"kube-apiserver": 10, "etcd": 5, "kwok": 7, "gone": 1}, busy: 100, total: 400}
	end := cpuSnapshot{procs: map[string]float64{"kube-apiserver": 40, "etcd": 15, "kwok": 2, "new": 3}, busy: 160, total: 520}
	f := end.since(start, 40)
	if f.BusyCores != 1.5 {
		t.Errorf("busy cores = %g, want 1.5 (60 busy seconds in 40)", f.BusyCores)
	}
	want := map[string]float64{"kube-apiserver": 30, "etcd": 10, otherProcesses: 20}
	if len(f.SecondsByProcess) != len(want) {
		t.Errorf("seconds by process = %v, want %v (kwok restarted, gone and new in one snapshot only)", f.SecondsByProcess, want)
	}
	for name, v := range want {
		if f.SecondsByProcess[name] != v {
			t.Errorf("%s: %g s, want %g", name, f.SecondsByProcess[name], v)
		}
	}
	if line := f.line(); !strings.HasPrefix(line, "1.50 of ") || !strings.Contains(line, "kube-apiserver 30.0, other 20.0, etcd 10.0") {
		t.Errorf("line = %q: want the busy cores, then the largest users first", line)
	}
}

func TestTakeCPUReadsThisProcess(t *testing.T) {
	s := takeCPU(map[string]int{})
	if _, ok := s.procs[benchmarkProcess]; !ok || s.total <= 0 || s.busy > s.total {
		t.Errorf("snapshot = %+v: want the benchmark's own time and the machine's", s)
	}
}
