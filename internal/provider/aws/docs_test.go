package aws

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated-table markers", docsPath)
	}
	want := s[:i+len(tableBegin)] + renderErrorTable() + s[j:]
	if want == s {
		return
	}
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(docsPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s does not show the error table of errors.go: run with UPDATE_DOCS=1", docsPath)
}
