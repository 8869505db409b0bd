// Package brief shortens what Millwright writes for people — conditions,
// Events, status messages — so that it stays one readable line and within
// the API's limits: a long message cut, an empty value named, a long list
// counted after its first few items.
package brief

import (
	"fmt"
	"strings"
)

// Truncate cuts s to at most n bytes, ending in "..." when cut (n ≥ 3).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// OrNone is s, or "(none)" when s is empty: a message never shows a blank.
func OrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// List joins the first shown items with sep and counts the rest:
// "a, b and 3 more" with ", ", "a; b; and 3 more" with "; " (whose items
// may hold commas themselves).
func List(items []string, shown int, sep string) string {
	if len(items) <= shown {
		return strings.Join(items, sep)
	}
	more := " and "
	if sep != ", " {
		more = sep + "and "
	}
	return fmt.Sprintf("%s%s%d more", strings.Join(items[:shown], sep), more, len(items)-shown)
}
