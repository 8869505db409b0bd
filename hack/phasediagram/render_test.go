package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

const committed = "../../docs/images/machine-phases.svg"

// TestCommittedDiagramIsCurrent fails when the transition table changed
// and docs/images/machine-phases.svg was not drawn again.
func TestCommittedDiagramIsCurrent(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.FromSlash(committed))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is stale or missing: run `make generate` (or `go run ./hack/phasediagram`)", committed)
	}
}

// TestTableNamesEveryPhase fails when a phase of the API is missing from
// the table, and so from the picture.
func TestTableNamesEveryPhase(t *testing.T) {
	named := map[v1alpha1.MachinePhase]bool{}
	for _, tr := range machine.PhaseTransitions {
		named[tr.From], named[tr.To] = true, true
	}
	for _, p := range []v1alpha1.MachinePhase{
		v1alpha1.PhasePending, v1alpha1.PhaseProvisioning, v1alpha1.PhaseCrashLoopBackOff, v1alpha1.PhaseProvisioned,
		v1alpha1.PhaseRunning, v1alpha1.PhaseUnknown, v1alpha1.PhaseFailed, v1alpha1.PhaseTerminating,
	} {
		if !named[p] {
			t.Errorf("phase %s is in no row of machine.PhaseTransitions", p)
		}
	}
}

// TestEveryRowIsAnEdge checks the picture draws each row: its own edge,
// or the one "any phase" edge for the deletions.
func TestEveryRowIsAnEdge(t *testing.T) {
	g := dot(machine.PhaseTransitions)
	for _, tr := range machine.PhaseTransitions {
		from := string(tr.From)
		if tr.From == machine.PhaseNew {
			from = newNode
		}
		edge := `"` + from + `" -> "` + string(tr.To) + `" [label="` + tr.Cause + `"`
		if tr.To == v1alpha1.PhaseTerminating && tr.Cause == deletedCause {
			edge = `"` + anyPhase + `" -> "` + string(tr.To) + `"`
		}
		if !strings.Contains(g, edge) {
			t.Errorf("no edge %s -> %s (%s) in:\n%s", from, tr.To, tr.Cause, g)
		}
	}
}
