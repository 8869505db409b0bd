package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// benchmarkProcess names the benchmark's own process in cpuFigures: its
// informers, its progress and, in the floor, its clients.
const benchmarkProcess = "benchmark"

// otherProcesses names, in cpuFigures, the machine's busy time spent
// outside every process of the run: other users' work, the kernel's own
// threads.
const otherProcesses = "other"

// cpuSnapshot is the CPU time used so far by each process of the run and
// by the whole machine, in seconds.
type cpuSnapshot struct {
	procs       map[string]float64 // by component name, and benchmarkProcess
	busy, total float64            // /proc/stat's first line: all CPUs
}

// takeCPU reads the CPU time of the processes pids names (the cluster's
// components and Millwright's), of the benchmark itself, and of the
// machine. A process that cannot be read (it has just exited) is left out.
func takeCPU(pids map[string]int) cpuSnapshot {
	s := cpuSnapshot{procs: map[string]float64{}}
	read := func(name string, pid int) {
		if v, err := procCPUSeconds(pid); err == nil {
			s.procs[name] = v
		}
	}
	for name, pid := range pids {
		read(name, pid)
	}
	read(benchmarkProcess, os.Getpid())
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		s.busy, s.total, _ = parseProcStat(string(data))
	}
	return s
}

// parseProcStat reads the machine's busy and total CPU seconds (all CPUs)
// from /proc/stat's "cpu" line: busy is user, nice, system, irq, softirq
// and steal (guest time is already in user), total adds idle and iowait.
func parseProcStat(text string) (busy, total float64, err error) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]float64
		for i := range v {
			if v[i], err = strconv.ParseFloat(f[i+1], 64); err != nil {
				return 0, 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
			}
		}
		user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		busy = user + nice + system + irq + softirq + steal
		return busy / clockTicks, (busy + idle + iowait) / clockTicks, nil
	}
	return 0, 0, fmt.Errorf("/proc/stat: no cpu line")
}

// cpuFigures is where the machine's CPU went during a scenario: what
// shows whether a scenario was bound by the two cores, and which process
// used them.
type cpuFigures struct {
	// Cores is the machine's CPU count.
	Cores int `json:"cores"`
	// BusyCores is the machine's average busy cores over the scenario:
	// Cores when it was saturated.
	BusyCores float64 `json:"busy_cores"`
	// SecondsByProcess is each process's CPU seconds (user + system) over
	// the scenario, and under otherProcesses the machine's busy seconds
	// outside them.
	SecondsByProcess map[string]float64 `json:"seconds_by_process"`
}

// since is the CPU used between start and s, over a scenario of seconds.
// A process missing from either snapshot, or whose time went backwards (a
// new process under the same name), is left out and counts as other.
func (s cpuSnapshot) since(start cpuSnapshot, seconds float64) *cpuFigures {
	f := &cpuFigures{Cores: runtime.NumCPU(), SecondsByProcess: map[string]float64{}}
	busy := s.busy - start.busy
	if seconds > 0 {
		f.BusyCores = round(busy/seconds, 2)
	}
	var listed float64
	for name, v := range s.procs {
		if v0, ok := start.procs[name]; ok && v >= v0 {
			f.SecondsByProcess[name] = round(v-v0, 1)
			listed += v - v0
		}
	}
	f.SecondsByProcess[otherProcesses] = round(max(0, busy-listed), 1)
	return f
}

// line is f in one line, the largest users first.
func (f *cpuFigures) line() string {
	names := make([]string, 0, len(f.SecondsByProcess))
	for name := range f.SecondsByProcess {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := f.SecondsByProcess[names[i]], f.SecondsByProcess[names[j]]
		return a > b || a == b && names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.1f", name, f.SecondsByProcess[name])
	}
	return fmt.Sprintf("%.2f of %d cores busy; CPU s: %s", f.BusyCores, f.Cores, strings.Join(parts, ", "))
}
