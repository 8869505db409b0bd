package docs_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

// fixture is what the runner needs to run one page's commands: the state
// the page assumes, the example names it uses, what it shows, and the
// commands it does not run with why. Every key must be a command line or
// a name of the page, so that a fixture cannot outlive what it is for.
type fixture struct {
	path string
	// setup runs before the page's commands: what the page assumes the
	// reader has done (shell commands run like the page's, sh(...)).
	setup []step
	// names maps a name the page uses as an example (a Machine whose name
	// ends in a random suffix) to a shell command printing the real one,
	// run right before each command that uses it.
	names map[string]string
	// expect is what a command line must do; a line not listed must exit 0.
	expect map[string]want
	// skip are the command lines not run, with why (they still pass the
	// checks of docs_test.go).
	skip map[string]string
}

// step is one step of a fixture's setup.
type step func(d *demoEnv) error

// sh is a setup step running a shell command line as the page's run.
func sh(line string) step {
	return func(d *demoEnv) error {
		if r := d.sh(line); r.err != nil {
			return fmt.Errorf("`%s`: %v\n%s", line, r.err, r.out)
		}
		return nil
	}
}

// want is a command's exit code and the parts of its output that matter
// (runs of blanks compare equal, so columns may be wider or narrower).
type want struct {
	code int
	out  []string
}

// commandTimeout bounds one command: `rollout status` waits for a
// rollout, and a command that never returns must fail, not hang the
// package.
const commandTimeout = 5 * time.Minute

var blanks = regexp.MustCompile(`[ \t]+`)

// runPage runs the commands of p's blocks (except not-run blocks), in
// page order, after fx's setup, and returns what went wrong, one line
// each.
func (d *demoEnv) runPage(p page, fx fixture) []string {
	var out []string
	for _, key := range fx.unknownKeys(p) {
		out = append(out, fmt.Sprintf("%s: the fixture names %q, which is not a command or name of the page", p.path, key))
	}
	for i, s := range fx.setup {
		if err := s(d); err != nil {
			return append(out, fmt.Sprintf("%s: setup step %d: %v", p.path, i+1, err))
		}
	}
	for _, b := range p.blocks {
		if b.notRun != "" {
			continue
		}
		shown := b.shownFirstLines()
		for _, line := range b.commands() {
			if _, ok := fx.skip[line]; ok {
				continue
			}
			if msg := d.runCommand(fx, line, shown[line]); msg != "" {
				out = append(out, fmt.Sprintf("%s:%d: `%s`: %s", p.path, b.line, line, msg))
			}
		}
	}
	return out
}

// runCommand runs one command line of the docs and says what is wrong
// with its result, or "". shown is the first line of the output the page
// shows after it (a table's header, a message's start), which the output
// must have too, or "".
func (d *demoEnv) runCommand(fx fixture, line, shown string) string {
	// One pass over the line as written, so that a real name is never
	// taken for an example name.
	var pairs []string
	for _, name := range fx.sortedNames() {
		if !strings.Contains(line, name) {
			continue
		}
		r := d.sh(fx.names[name])
		real := strings.TrimSpace(r.out)
		if r.err != nil || real == "" {
			return fmt.Sprintf("finding the object %s stands for (`%s`): %v %s", name, fx.names[name], r.err, r.out)
		}
		pairs = append(pairs, name, real)
	}
	run := strings.NewReplacer(pairs...).Replace(line)
	r := d.sh(run)
	w := fx.expect[line]
	code := 0
	if ee, ok := r.err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if r.err != nil {
		return fmt.Sprintf("%v\n%s", r.err, r.out)
	}
	ran := ""
	if run != line {
		ran = fmt.Sprintf(" (ran `%s`)", run)
	}
	if code != w.code {
		return fmt.Sprintf("exit code %d, want %d%s:\n%s", code, w.code, ran, r.out)
	}
	got := blanks.ReplaceAllString(r.out, " ")
	for _, o := range append(w.out, shown) {
		if o == "" {
			continue
		}
		if o = blanks.ReplaceAllString(o, " "); !strings.Contains(got, o) {
			return fmt.Sprintf("the output does not show %q%s:\n%s", o, ran, r.out)
		}
	}
	return ""
}

// shownFirstLines maps each "$ " command of a console (or unlabelled)
// block to the first line of the output the block shows after it.
func (b block) shownFirstLines() map[string]string {
	if b.info != "" && b.info != "console" {
		return nil
	}
	shown := map[string]string{}
	cmd := ""
	for _, l := range b.body {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "$ "):
			cmd = strings.TrimSpace(stripComment(strings.TrimPrefix(t, "$ ")))
		case cmd != "" && t != "":
			shown[cmd], cmd = t, ""
		}
	}
	return shown
}

type shResult struct {
	out string
	err error
}

// sh runs a command line with bash, in the repository root (where the
// docs' relative paths start), with the demo's KUBECONFIG and the
// reader's bin/ first on PATH.
func (d *demoEnv) sh(line string) shResult {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", line)
	cmd.Dir = check.root
	cmd.Env = d.env
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after %s: %w", commandTimeout, err)
	}
	return shResult{out: out.String(), err: err}
}

// sortedNames are the example names, longest first, so that a Machine's
// name is replaced as a whole, not its MachineSet's name it starts with.
func (fx fixture) sortedNames() []string {
	var names []string
	for n := range fx.names {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	return names
}

// unknownKeys are the fixture's command lines and names the page does not
// have (not in a block that runs).
func (fx fixture) unknownKeys(p page) []string {
	lines := map[string]bool{}
	text := ""
	for _, b := range p.blocks {
		if b.notRun != "" {
			continue
		}
		for _, l := range b.commands() {
			lines[l] = true
			text += l + "\n"
		}
	}
	var out []string
	for l := range fx.skip {
		if !lines[l] {
			out = append(out, l)
		}
	}
	for l := range fx.expect {
		if !lines[l] {
			out = append(out, l)
		}
	}
	for n := range fx.names {
		if !strings.Contains(text, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// runnable reports whether a page has a command the runner would run: a
// block without a not-run reason that has commands.
func runnable(p page) bool {
	for _, b := range p.blocks {
		if b.notRun == "" && len(b.commands()) > 0 {
			return true
		}
	}
	return false
}

// unlisted returns the pages with commands to run that no fixture lists
// and that are not exempt: each must get a fixture (or its blocks a
// not-run reason), so that no page's commands go unrun unnoticed.
func unlisted(ps []page, fixtures []fixture, exempt map[string]string) []string {
	listed := map[string]bool{}
	for _, fx := range fixtures {
		listed[fx.path] = true
	}
	var out []string
	for _, p := range ps {
		if runnable(p) && !listed[p.path] && exempt[p.path] == "" {
			out = append(out, fmt.Sprintf("%s has commands to run but is not in runOrder (test/docs/runpages_test.go): give it a fixture there, or its blocks <!-- not-run: reason -->", p.path))
		}
	}
	return out
}
