package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// point is one change of a MachineSet: at seconds, it had machines
// Machines (not being deleted), running of them Running.
type point struct {
	seconds           float64
	machines, running int
}

// set is one MachineSet's points, in time order.
type set struct {
	name   string
	points []point
}

// readTimeline reads the bench's CSV (seconds,set,machines,running) into
// one series per MachineSet, in the order the sets first appear; rows of
// Machines that belong to no set are left out.
func readTimeline(r io.Reader) ([]*set, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 || fmt.Sprint(rows[0]) != "[seconds set machines running]" {
		return nil, fmt.Errorf("want a header seconds,set,machines,running and rows")
	}
	var sets []*set
	byName := map[string]*set{}
	for i, row := range rows[1:] {
		if len(row) != 4 {
			return nil, fmt.Errorf("row %d: want 4 fields, got %d", i+2, len(row))
		}
		if row[1] == "" {
			continue
		}
		sec, err1 := strconv.ParseFloat(row[0], 64)
		m, err2 := strconv.Atoi(row[2])
		run, err3 := strconv.Atoi(row[3])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("row %d: %q is not seconds,set,machines,running", i+2, row)
		}
		s, ok := byName[row[1]]
		if !ok {
			s = &set{name: row[1]}
			byName[row[1]] = s
			sets = append(sets, s)
		}
		s.points = append(s.points, point{sec, m, run})
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no MachineSet in the timeline")
	}
	return sets, nil
}

// total is the Machines of all sets together over time: what a rollout's
// surge bound limits.
func total(sets []*set) []point {
	type change struct {
		at                float64
		set               int
		machines, running int
	}
	var changes []change
	for i, s := range sets {
		for _, p := range s.points {
			changes = append(changes, change{p.seconds, i, p.machines, p.running})
		}
	}
	// The rows are in time order per set; merge them by time, stably.
	for i := 1; i < len(changes); i++ {
		for j := i; j > 0 && changes[j].at < changes[j-1].at; j-- {
			changes[j], changes[j-1] = changes[j-1], changes[j]
		}
	}
	cur := make([]point, len(sets))
	var out []point
	for _, c := range changes {
		cur[c.set] = point{c.at, c.machines, c.running}
		sum := point{seconds: c.at}
		for _, p := range cur {
			sum.machines += p.machines
			sum.running += p.running
		}
		out = append(out, sum)
	}
	return out
}
