package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/goccy/go-graphviz"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// newNode names the start of the diagram: a Machine without a phase yet.
const newNode = "new Machine"

// dot writes the transitions as a Graphviz graph, one edge per row of the
// table, except the rows "deleted" into Terminating: when every phase has
// one (any Machine may be deleted), they are drawn as one edge from "any
// phase", so the life of a Machine stands out.
func dot(transitions []machine.PhaseTransition) string {
	var b strings.Builder
	b.WriteString("digraph phases {\n")
	b.WriteString("  rankdir=TB; pad=0.3; nodesep=0.5; ranksep=0.55; fontname=\"Helvetica\"; fontsize=10;\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", color=\"#3a5a8c\", fontname=\"Helvetica\", fontsize=12];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=9, color=\"#3a5a8c\", fontcolor=\"#333333\"];\n")
	fmt.Fprintf(&b, "  %q [shape=point, width=0.2, color=\"#3a5a8c\", xlabel=%q];\n", newNode, "new")
	fmt.Fprintf(&b, "  %q [fillcolor=\"#e3f4e1\", color=\"#2e7d32\"];\n", v1alpha1.PhaseRunning)
	fmt.Fprintf(&b, "  %q [fillcolor=\"#fde8e8\", color=\"#b71c1c\"];\n", v1alpha1.PhaseFailed)
	fmt.Fprintf(&b, "  %q [fillcolor=\"#fff4de\", color=\"#b26a00\"];\n", v1alpha1.PhaseUnknown)
	fmt.Fprintf(&b, "  %q [fillcolor=\"#fff4de\", color=\"#b26a00\"];\n", v1alpha1.PhaseCrashLoopBackOff)
	fmt.Fprintf(&b, "  %q [fillcolor=\"#eeeeee\", color=\"#666666\"];\n", v1alpha1.PhaseTerminating)
	anyDeleted := everyPhaseDeletable(transitions)
	if anyDeleted {
		// The cause is in the node's text: a label beside the edge would
		// run into the Failed one's.
		fmt.Fprintf(&b, "  %q [shape=plaintext, style=\"\", fontcolor=\"#666666\", label=%q];\n", anyPhase, anyPhase+", when "+deletedCause)
		fmt.Fprintf(&b, "  %q -> %q [style=dashed, color=\"#9e9e9e\"];\n", anyPhase, v1alpha1.PhaseTerminating)
	}
	for _, t := range transitions {
		if anyDeleted && t.To == v1alpha1.PhaseTerminating && t.Cause == deletedCause {
			continue
		}
		from := string(t.From)
		if t.From == machine.PhaseNew {
			from = newNode
		}
		attrs := fmt.Sprintf("label=%q", t.Cause)
		switch t.To {
		case v1alpha1.PhaseTerminating:
			attrs += ", style=dashed, color=\"#9e9e9e\""
		case v1alpha1.PhaseFailed:
			attrs += ", color=\"#b71c1c\""
		}
		fmt.Fprintf(&b, "  %q -> %q [%s];\n", from, string(t.To), attrs)
	}
	b.WriteString("}\n")
	return b.String()
}

const (
	anyPhase     = "any phase"
	deletedCause = "deleted"
)

// everyPhaseDeletable reports whether the table has a "deleted" row into
// Terminating from every phase it names (but Terminating).
func everyPhaseDeletable(transitions []machine.PhaseTransition) bool {
	deleted := map[v1alpha1.MachinePhase]bool{}
	for _, t := range transitions {
		if t.To == v1alpha1.PhaseTerminating {
			deleted[t.From] = true
		}
	}
	for _, t := range transitions {
		for _, p := range []v1alpha1.MachinePhase{t.From, t.To} {
			if p != v1alpha1.PhaseTerminating && !deleted[p] {
				return false
			}
		}
	}
	return true
}

// render lays out the table with dot and returns the SVG.
func render() ([]byte, error) {
	ctx := context.Background()
	g, err := graphviz.New(ctx)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	graph, err := graphviz.ParseBytes([]byte(dot(machine.PhaseTransitions)))
	if err != nil {
		return nil, err
	}
	defer graph.Close()
	var buf bytes.Buffer
	if err := g.Render(ctx, graph, graphviz.SVG, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
