package main

import (
	"slices"
	"testing"
	"time"
)

// A second's rows are the writes counted in it, by key, without the
// refused ones' own keys (they are counted under their request too) and
// without the keys that did not move.
func TestRateRowsAreTheSecondsWrites(t *testing.T) {
	prev := map[string]float64{"machines POST": 10, "machines/status PATCH": 4, "nodes PATCH": 7, "nodes PATCH 409": 1}
	cur := map[string]float64{"machines POST": 60, "machines/status PATCH": 4, "nodes PATCH": 9, "nodes PATCH 409": 2, "nodes DELETE": 3}
	got := rateRows(time.Unix(1700000000, 0), "scale-down", prev, cur)
	want := []string{
		"1700000000,scale-down,machines POST,50",
		"1700000000,scale-down,nodes DELETE,3",
		"1700000000,scale-down,nodes PATCH,2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rateRows = %q, want %q", got, want)
	}
}
