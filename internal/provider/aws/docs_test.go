package aws

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/docsection"
)

// docsPath is the page that shows the error table to people.
var docsPath = filepath.Join("..", "..", "..", "docs", "providers", "aws.md")

const (
	tableBegin = "<!-- BEGIN GENERATED ERROR TABLE: go test ./internal/provider/aws -run TestDocsShowTheErrorTable with UPDATE_DOCS=1 -->\n"
	tableEnd   = "<!-- END GENERATED ERROR TABLE -->\n"
)

// renderErrorTable renders ErrorTable and ConditionTable as markdown.
func renderErrorTable() string {
	var b strings.Builder
	b.WriteString("\n| EC2 error code | driver code | what it means for the Machine |\n| --- | --- | --- |\n")
	for _, r := range ErrorTable {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.EC2Code, r.Code, r.Why)
	}
	b.WriteString("\n| without an EC2 code | driver code |\n| --- | --- |\n")
	for _, r := range ConditionTable {
		fmt.Fprintf(&b, "| %s | %s |\n", r.Condition, r.Code)
	}
	b.WriteString("\n")
	return b.String()
}

// TestDocsShowTheErrorTable fails when docs/providers/aws.md does not show
// the error table the code has; UPDATE_DOCS=1 rewrites the section.
func TestDocsShowTheErrorTable(t *testing.T) {
	docsection.Check(t, docsPath, tableBegin, tableEnd, renderErrorTable(), "the error table of errors.go")
}
