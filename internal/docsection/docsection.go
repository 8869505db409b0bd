// Package docsection checks, from a test, that a page of docs/ shows a
// section generated from the code: the text between two marker comments
// must be what the code renders. With UPDATE_DOCS=1 the test rewrites the
// section instead of failing.
package docsection

import (
	"os"
	"strings"
	"testing"
)

// Check fails t when the text of the file at path between begin and end
// (both marker lines, kept) is not body; with UPDATE_DOCS=1 it writes body
// there. what names the code the section comes from, for the failure.
func Check(t testing.TB, path, begin, end, body, what string) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated section's markers", path)
	}
	want := s[:i+len(begin)] + body + s[j:]
	if want == s {
		return
	}
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s does not show %s: run with UPDATE_DOCS=1", path, what)
}
