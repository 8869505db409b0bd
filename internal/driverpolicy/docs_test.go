package driverpolicy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/docsection"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// docsPath is the document that shows the retry table to people.
var docsPath = filepath.Join("..", "..", "docs", "driver-errors.md")

const (
	tablesBegin = "<!-- BEGIN GENERATED TABLES: go test ./internal/driverpolicy -run TestDocsShowTheRetryTable with UPDATE_DOCS=1 -->\n"
	tablesEnd   = "<!-- END GENERATED TABLES -->\n"
)

// renderTables renders recoveryTable as one markdown table per method,
// in the order of the methods' documentation.
func renderTables() string {
	var b strings.Builder
	for _, m := range []driver.Method{driver.MethodCreateMachine, driver.MethodInitializeMachine, driver.MethodGetMachineStatus,
		driver.MethodDeleteMachine, driver.MethodListMachines, driver.MethodGetVolumeIDs, driver.MethodUpdateMachine} {
		fmt.Fprintf(&b, "\n### %s\n\n| code | action | driver asks for retry | recovery |\n| --- | --- | --- | --- |\n", m)
		codes := make([]driver.Code, 0, len(recoveryTable[m]))
		for c := range recoveryTable[m] {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		for _, c := range codes {
			o := recoveryTable[m][c]
			auto := "no"
			if o.AutoRetry {
				auto = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c, o.Action, auto, o.Recovery)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// TestDocsShowTheRetryTable fails when docs/driver-errors.md does not show
// the retry table the code has; UPDATE_DOCS=1 rewrites the section.
func TestDocsShowTheRetryTable(t *testing.T) {
	docsection.Check(t, docsPath, tablesBegin, tablesEnd, renderTables(), "the retry table of policy.go")
}
