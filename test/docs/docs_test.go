// Package docs_test checks the documentation against the repository:
// every shell command in the docs' fenced blocks is checked without a
// cluster (`--help` of the exact command line, `make -n`, `go list`, the
// Helm chart's values), every path and link must exist, and a block that
// cannot be checked must say why in a `<!-- not-run: reason -->` comment
// just before it. Then the commands are run for real, page by page, on
// the demo's cluster and fleet (run_test.go, runpages_test.go).
package docs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/testenv"
)

var check *checker

func TestMain(m *testing.M) {
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, err := os.MkdirTemp("", "docs-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The commands the docs name, built from this tree (bin/ may hold
	// older builds, or none).
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/...: %v\n%s", err, out)
		os.Exit(1)
	}
	check = &checker{root: root, bin: bin, help: map[string]helpResult{}}
	code := m.Run()
	if theDemo != nil {
		theDemo.shutdown()
	}
	_ = os.RemoveAll(bin)
	os.Exit(code)
}

// pages returns README.md and every page under docs/.
func pages(t *testing.T) []page {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(check.root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(check.root, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []page
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(check.root, f))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parsePage(f, string(b)))
	}
	return out
}

// problems checks one page and returns what is wrong, one line each.
func (c *checker) problems(p page) []string {
	var out []string
	for _, b := range p.blocks {
		if b.notRun == "-" {
			out = append(out, fmt.Sprintf("%s:%d: a not-run comment without a reason", p.path, b.line))
			continue
		}
		if b.notRun != "" {
			continue
		}
		for _, line := range b.commands() {
			for _, words := range splitCommands(line) {
				if msg := c.checkCommand(words); msg != "" {
					out = append(out, fmt.Sprintf("%s:%d: `%s`: %s", p.path, b.line, line, msg))
				}
			}
		}
	}
	for _, l := range p.prose {
		for _, span := range codeSpans(l.text) {
			if f := flagName(strings.Fields(span + " x")[0]); f != "" && !c.knownFlags()[f] && !p.foreign[f] {
				out = append(out, fmt.Sprintf("%s:%d: `%s`: no program of this repository has the flag %s: fix it, or declare it <!-- foreign-flags: %s --> on the page", p.path, l.line, span, f, f))
			}
			if msg := c.checkSpan(span); msg != "" {
				out = append(out, fmt.Sprintf("%s:%d: `%s`: %s", p.path, l.line, span, msg))
			}
		}
		for _, target := range links(l.text) {
			if msg := c.checkLink(p.path, target); msg != "" {
				out = append(out, fmt.Sprintf("%s:%d: link %s: %s", p.path, l.line, target, msg))
			}
		}
	}
	return out
}

// checkSpan checks the inline code of prose that is a command or a path:
// `make TARGET`, `kubectl millwright VERB ...`, `docs/...`.
func (c *checker) checkSpan(span string) string {
	words := strings.Fields(span)
	if len(words) == 0 {
		return ""
	}
	for len(words) > 1 && isAssignment(words[0]) {
		words = words[1:]
	}
	switch {
	case words[0] == "make" && len(words) > 1:
		return c.checkMake(words[1:])
	case len(words) > 2 && words[0] == "kubectl" && words[1] == "millwright" && !strings.ContainsAny(span, "|…") && !strings.Contains(span, "..."):
		return c.checkCobra(filepath.Join(c.bin, "kubectl-millwright"), words[2:])
	case len(words) == 1:
		if p, ok := c.repoPath(words[0]); ok && !c.exists(p) {
			return p + " does not exist"
		}
	}
	return ""
}

// checkLink checks a relative link resolves to a file of the repository.
func (c *checker) checkLink(from, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	target = strings.SplitN(target, "#", 2)[0]
	p := filepath.ToSlash(filepath.Join(filepath.Dir(from), target))
	if !c.exists(p) {
		return p + " does not exist"
	}
	return ""
}

// TestEveryCommandInTheDocsIsChecked runs the checks over README.md and
// docs/.
func TestEveryCommandInTheDocsIsChecked(t *testing.T) {
	for _, p := range pages(t) {
		t.Run(p.path, func(t *testing.T) {
			for _, msg := range check.problems(p) {
				t.Error(msg)
			}
		})
	}
}
