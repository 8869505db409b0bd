package logtail

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(p, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Tail(p, 2); got != "two\nthree" {
		t.Errorf("Tail(2) = %q; want the last two lines", got)
	}
	if got := Tail(p, 10); got != "one\ntwo\nthree" {
		t.Errorf("Tail(10) = %q; want every line", got)
	}
	if got := Tail(filepath.Join(t.TempDir(), "absent"), 2); !strings.HasPrefix(got, "(no log: ") {
		t.Errorf("Tail of a missing file = %q; want a note saying so", got)
	}
	// Only the end of a large file is read.
	big := strings.Repeat("x", window) + "\nlast\n"
	if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Tail(p, 1); got != "last" {
		t.Errorf("Tail(1) of a large file = %q", got)
	}
}
