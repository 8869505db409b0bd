package docs_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// checker checks commands, paths and links against the repository at
// root, with the programs of cmd/ built into bin.
type checker struct {
	root string
	bin  string // the programs of ./cmd/..., built for the test

	mu   sync.Mutex
	help map[string]helpResult // by the command line run

	flagsOnce sync.Once
	flags     map[string]bool
}

var flagRE = regexp.MustCompile(`(?:^|[\s,])(--[a-z0-9][a-z0-9-]*)`)

// knownFlags are the flags of this repository's programs: docs/flags,
// every command of kubectl-millwright, and the --help of cmd/'s other
// programs.
func (c *checker) knownFlags() map[string]bool {
	c.flagsOnce.Do(func() {
		c.flags = map[string]bool{}
		add := func(text string) {
			for _, m := range flagRE.FindAllStringSubmatch(text, -1) {
				c.flags[m[1]] = true
			}
		}
		refs, _ := filepath.Glob(filepath.Join(c.root, "docs", "flags", "*.txt"))
		for _, f := range refs {
			b, _ := os.ReadFile(f)
			add(string(b))
		}
		progs, _ := os.ReadDir(c.bin)
		for _, p := range progs {
			add(c.run(filepath.Join(c.bin, p.Name()), []string{"--help"}).out)
		}
		var walk func(path []string)
		walk = func(path []string) {
			help := c.run(filepath.Join(c.bin, "kubectl-millwright"), append(append([]string{}, path...), "--help")).out
			add(help)
			for sub := range subcommands(help) {
				if sub != "help" && sub != "completion" && sub != "__complete" {
					walk(append(append([]string{}, path...), sub))
				}
			}
		}
		walk(nil)
	})
	return c.flags
}

type helpResult struct {
	out string
	err error
}

// builtPrefixes name paths that exist only once built or generated
// (bin/, _output/), or on a user's machine.
var builtPrefixes = []string{"bin/", "_output/", "~", "/"}

// checkCommand checks one command (its words) and returns what is wrong,
// or "" when it is fine. It knows the commands the docs use; anything
// else is an error, so that a new kind of command gets a checker or a
// not-run reason.
func (c *checker) checkCommand(words []string) string {
	for len(words) > 0 && isAssignment(words[0]) {
		words = words[1:] // VAR=value before the command
	}
	if len(words) == 0 {
		return ""
	}
	if msg := c.checkPaths(words[1:]); msg != "" {
		return msg
	}
	name, args := words[0], words[1:]
	switch {
	case name == "make":
		return c.checkMake(args)
	case name == "kubectl" && len(args) > 0 && args[0] == "millwright":
		return c.checkCobra(filepath.Join(c.bin, "kubectl-millwright"), args[1:])
	case name == "kubectl":
		return c.checkCobra(filepath.Join(c.root, "bin", "kubectl"), args)
	case name == "kubectl-millwright" || name == "millwright" || name == "bin/kubectl-millwright":
		return c.checkCobra(filepath.Join(c.bin, "kubectl-millwright"), args)
	case isProgram(c.root, name):
		return c.checkProgram(strings.TrimPrefix(name, "bin/"), args)
	case name == "go":
		return c.checkGo(args)
	case name == "helm":
		return c.checkHelm(args)
	}
	return fmt.Sprintf("no checker for %q: mark the block <!-- not-run: reason --> or teach test/docs to check it", name)
}

func isAssignment(w string) bool {
	return regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(w)
}

// isProgram reports whether name is one of cmd/'s programs, as bin/NAME
// or NAME.
func isProgram(root, name string) bool {
	n := strings.TrimPrefix(name, "bin/")
	if strings.Contains(n, "/") || n == "" {
		return false
	}
	st, err := os.Stat(filepath.Join(root, "cmd", n))
	return err == nil && st.IsDir()
}

// checkMake checks every target exists: `make -n TARGET` succeeds.
func (c *checker) checkMake(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		cmd := exec.Command("make", "-n", a)
		cmd.Dir = c.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Sprintf("make target %q: make -n: %v: %s", a, err, lastLine(out))
		}
	}
	return ""
}

// checkProgram runs one of cmd/'s programs with the documented flags and
// --help: it must accept them; for the programs docs/flags documents,
// every flag must also be there.
func (c *checker) checkProgram(name string, args []string) string {
	if ref, err := os.ReadFile(filepath.Join(c.root, "docs", "flags", name+".txt")); err == nil {
		for _, a := range args {
			if f := flagName(a); f != "" && !regexp.MustCompile(`(?m)^\s+(-\w, )?`+regexp.QuoteMeta(f)+`\b`).Match(ref) {
				return fmt.Sprintf("%s: flag %s is not in docs/flags/%s.txt", name, f, name)
			}
		}
	}
	if r := c.run(filepath.Join(c.bin, name), append(append([]string{}, args...), "--help")); r.err != nil {
		return fmt.Sprintf("%s %s --help: %v: %s", name, strings.Join(args, " "), r.err, lastLine([]byte(r.out)))
	}
	return ""
}

// flagName is "--name" of "--name" or "--name=value", else "".
func flagName(a string) string {
	if !strings.HasPrefix(a, "--") || len(a) == 2 {
		return ""
	}
	return strings.SplitN(a, "=", 2)[0]
}

// valueFlags take the next word as their value when written without "=".
var valueFlags = map[string]bool{"-n": true, "--namespace": true, "--context": true, "--kubeconfig": true, "-o": true, "--output": true}

// checkCobra checks a command line of a cobra program (kubectl-millwright,
// kubectl): every verb down to the command is one the program has, and
// the command accepts the flags (`... --help` succeeds).
func (c *checker) checkCobra(prog string, args []string) string {
	var path []string
	rest := args
	for {
		r := c.run(prog, append(append([]string{}, path...), "--help"))
		if r.err != nil {
			return fmt.Sprintf("%s %s --help: %v: %s", filepath.Base(prog), strings.Join(path, " "), r.err, lastLine([]byte(r.out)))
		}
		subs := subcommands(r.out)
		if len(subs) == 0 {
			break
		}
		verb, after := firstPositional(rest)
		if verb == "" {
			break
		}
		if !subs[verb] {
			return fmt.Sprintf("%s %s: unknown command %q", filepath.Base(prog), strings.Join(path, " "), verb)
		}
		path, rest = append(path, verb), after
	}
	if r := c.run(prog, append(append([]string{}, args...), "--help")); r.err != nil {
		return fmt.Sprintf("%s %s --help: %v: %s", filepath.Base(prog), strings.Join(args, " "), r.err, lastLine([]byte(r.out)))
	}
	return ""
}

// subcommands lists the commands under "Available Commands:" in cobra's
// help, or none for a leaf command.
func subcommands(help string) map[string]bool {
	i := strings.Index(help, "Available Commands:\n")
	if i < 0 {
		return nil
	}
	subs := map[string]bool{}
	for _, l := range strings.Split(help[i+len("Available Commands:\n"):], "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			break
		}
		subs[f[0]] = true
	}
	return subs
}

// firstPositional is the first word that is not a flag or a flag's
// value, and the words after it.
func firstPositional(words []string) (string, []string) {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if strings.HasPrefix(w, "-") {
			if valueFlags[w] {
				i++
			}
			continue
		}
		return w, append(append([]string{}, words[:i]...), words[i+1:]...)
	}
	return "", words
}

// checkGo checks the packages a go command names exist (go list).
func (c *checker) checkGo(args []string) string {
	if len(args) == 0 {
		return "go without a command"
	}
	switch args[0] {
	case "test", "build", "run", "vet", "list", "install", "generate":
	default:
		return fmt.Sprintf("no checker for go %s", args[0])
	}
	var pkgs []string
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "./") {
			pkgs = append(pkgs, a)
		}
	}
	if len(pkgs) == 0 {
		return ""
	}
	cmd := exec.Command("go", append([]string{"list"}, pkgs...)...)
	cmd.Dir = c.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("go list %s: %v: %s", strings.Join(pkgs, " "), err, lastLine(out))
	}
	return ""
}

// checkHelm checks a helm command against the chart: the chart exists
// and every --set key is one of its values.
func (c *checker) checkHelm(args []string) string {
	if len(args) == 0 {
		return "helm without a command"
	}
	switch args[0] {
	case "install", "upgrade", "template", "lint", "show", "uninstall":
	default:
		return fmt.Sprintf("no checker for helm %s", args[0])
	}
	var values map[string]any
	for i, a := range args {
		if strings.HasPrefix(a, "charts/") {
			b, err := os.ReadFile(filepath.Join(c.root, a, "values.yaml"))
			if err != nil {
				return fmt.Sprintf("helm: chart %s: %v", a, err)
			}
			if err := yaml.Unmarshal(b, &values); err != nil {
				return fmt.Sprintf("helm: %s/values.yaml: %v", a, err)
			}
		}
		_ = i
	}
	for i, a := range args {
		var set string
		switch {
		case a == "--set" && i+1 < len(args):
			set = args[i+1]
		case strings.HasPrefix(a, "--set="):
			set = strings.TrimPrefix(a, "--set=")
		default:
			continue
		}
		if values == nil {
			return "helm --set without a chart under charts/"
		}
		for _, kv := range strings.Split(set, ",") {
			key := strings.SplitN(kv, "=", 2)[0]
			if !hasValue(values, strings.Split(key, ".")) {
				return fmt.Sprintf("helm --set %s: the chart has no value %s (charts/millwright/values.yaml)", kv, key)
			}
		}
	}
	return ""
}

// hasValue reports whether values has the dotted key; under an empty map
// (labels: {}), any key is a value a user may set.
func hasValue(values map[string]any, key []string) bool {
	v, ok := values[key[0]]
	if !ok {
		return false
	}
	if len(key) == 1 {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if len(m) == 0 {
		return true
	}
	return hasValue(m, key[1:])
}

// checkPaths checks the words that name files of the repository exist.
func (c *checker) checkPaths(words []string) string {
	for _, w := range words {
		if v := strings.SplitN(w, "=", 2); len(v) == 2 && strings.HasPrefix(w, "-") {
			w = v[1]
		}
		if p, ok := c.repoPath(w); ok && !c.exists(p) {
			return fmt.Sprintf("%s does not exist", p)
		}
	}
	return ""
}

var pathRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.*-]+)*/?$`)

// repoPath reports whether w names a file of the repository: a relative
// path whose first element is a top-level entry of the repository (so
// API keys like machine.millwright.dev/paused are not taken for paths).
func (c *checker) repoPath(w string) (string, bool) {
	w = strings.TrimSuffix(strings.TrimSuffix(w, "."), ",")
	if !strings.Contains(w, "/") || !pathRE.MatchString(w) || strings.HasPrefix(w, "./") && strings.HasSuffix(w, "...") {
		return "", false
	}
	w = strings.TrimPrefix(w, "./")
	for _, p := range builtPrefixes {
		if strings.HasPrefix(w, p) {
			return "", false
		}
	}
	first := strings.SplitN(w, "/", 2)[0]
	if first == "." || first == ".." {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(c.root, first)); err != nil {
		return "", false
	}
	return w, true
}

func (c *checker) exists(p string) bool {
	matches, _ := filepath.Glob(filepath.Join(c.root, p))
	return len(matches) > 0
}

// run runs prog with args (once per distinct line) and keeps its output.
func (c *checker) run(prog string, args []string) helpResult {
	key := prog + "\x00" + strings.Join(args, "\x00")
	c.mu.Lock()
	r, ok := c.help[key]
	c.mu.Unlock()
	if ok {
		return r
	}
	cmd := exec.Command(prog, args...)
	cmd.Dir = c.root
	// No cluster: --help must not need one.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.bin, "no-kubeconfig"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	r = helpResult{out: out.String(), err: err}
	c.mu.Lock()
	c.help[key] = r
	c.mu.Unlock()
	return r
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
