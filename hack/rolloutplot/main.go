// Command rolloutplot draws a rollout timeline — Machines per MachineSet
// over time — from the CSV a bench run writes (go run ./test/bench
// -timeline FILE, see docs/rollout.md), as an SVG with gonum.org/v1/plot.
// hack/generate.sh runs it on the committed data,
// docs/images/rollout-timeline.csv; a test fails when the picture is stale.
//
// Usage: go run ./hack/rolloutplot -in docs/images/rollout-timeline.csv -o docs/images/rollout-timeline.svg
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	in := flag.String("in", "docs/images/rollout-timeline.csv", "the bench run's timeline (CSV)")
	out := flag.String("o", "docs/images/rollout-timeline.svg", "the SVG file to write")
	flag.Parse()
	err := func() error {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		series, err := readTimeline(f)
		if err != nil {
			return fmt.Errorf("%s: %w", *in, err)
		}
		svg, err := render(series)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(*out, svg, 0o644)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rolloutplot:", err)
		os.Exit(1)
	}
}
