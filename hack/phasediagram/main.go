// Command phasediagram draws the Machine phase machine from the machine
// controller's own transition table (machine.PhaseTransitions) as an SVG,
// with Graphviz's dot layout (github.com/goccy/go-graphviz, Graphviz
// compiled to WebAssembly: no installed Graphviz needed). hack/generate.sh
// runs it into docs/images/machine-phases.svg; a test fails when that file
// is stale.
//
// Usage: go run ./hack/phasediagram -o docs/images/machine-phases.svg
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("o", "docs/images/machine-phases.svg", "the SVG file to write")
	flag.Parse()
	svg, err := render()
	if err == nil {
		err = os.MkdirAll(filepath.Dir(*out), 0o755)
	}
	if err == nil {
		err = os.WriteFile(*out, svg, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "phasediagram:", err)
		os.Exit(1)
	}
}
