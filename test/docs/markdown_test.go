package docs_test

import (
	"regexp"
	"strings"
)

// block is one fenced code block of a page.
type block struct {
	line   int    // of the opening fence, 1-based
	info   string // the language after the fence: sh, yaml, ...
	body   []string
	notRun string // the reason of a <!-- not-run: reason --> just before it
}

// page is a Markdown file split into its fenced blocks and its prose.
type page struct {
	path   string
	blocks []block
	prose  []proseLine
	// foreign are the flags of other programs the page names, declared
	// in <!-- foreign-flags: --a --b --> comments.
	foreign map[string]bool
}

type proseLine struct {
	line int
	text string
}

var (
	fenceRE   = regexp.MustCompile("^\\s*```\\s*([A-Za-z0-9_+-]*)")
	notRunRE  = regexp.MustCompile(`^<!--\s*not-run:\s*(.*?)\s*-->$`)
	foreignRE = regexp.MustCompile(`<!--\s*foreign-flags:([^>]*)-->`)
)

// parsePage splits Markdown text into fenced blocks and prose lines. A
// not-run comment applies to the block whose fence follows it, blank
// lines between allowed.
func parsePage(path, text string) page {
	p := page{path: path, foreign: map[string]bool{}}
	for _, m := range foreignRE.FindAllStringSubmatch(text, -1) {
		for _, f := range strings.Fields(m[1]) {
			p.foreign[f] = true
		}
	}
	lines := strings.Split(text, "\n")
	pendingNotRun := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			b := block{line: i + 1, info: m[1], notRun: pendingNotRun}
			pendingNotRun = ""
			for i++; i < len(lines) && !fenceRE.MatchString(lines[i]); i++ {
				b.body = append(b.body, lines[i])
			}
			p.blocks = append(p.blocks, b)
			continue
		}
		trimmed := strings.TrimSpace(l)
		if m := notRunRE.FindStringSubmatch(trimmed); m != nil {
			pendingNotRun = m[1]
			if pendingNotRun == "" {
				pendingNotRun = "-" // an empty reason is reported as such
			}
			continue
		}
		if trimmed != "" {
			pendingNotRun = ""
		}
		p.prose = append(p.prose, proseLine{i + 1, l})
	}
	return p
}

// shellInfos are the block languages whose every line is a command.
var shellInfos = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// commands returns the shell commands of a block: every line of a shell
// block (comments dropped, continuations joined), and the "$ " lines of
// an unlabelled or console block (the rest is output).
func (b block) commands() []string {
	shell := shellInfos[b.info] && b.info != "console"
	prompt := b.info == "" || b.info == "console"
	if !shell && !prompt {
		return nil
	}
	var out []string
	cur := ""
	for _, l := range b.body {
		if prompt && cur == "" {
			if !strings.HasPrefix(strings.TrimSpace(l), "$ ") {
				continue
			}
			l = strings.TrimPrefix(strings.TrimSpace(l), "$ ")
		}
		l = stripComment(l)
		if strings.HasSuffix(strings.TrimRight(l, " "), `\`) {
			cur += strings.TrimSuffix(strings.TrimRight(l, " "), `\`) + " "
			continue
		}
		cur += l
		if strings.TrimSpace(cur) != "" {
			out = append(out, strings.TrimSpace(cur))
		}
		cur = ""
	}
	if strings.TrimSpace(cur) != "" {
		out = append(out, strings.TrimSpace(cur))
	}
	return out
}

// stripComment drops a # comment that starts a line or follows a blank,
// outside quotes.
func stripComment(l string) string {
	var quote rune
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return l[:i]
		}
	}
	return l
}

// splitCommands splits a command line at &&, ||, ;, | and & outside
// quotes, and each part into words (quotes removed).
func splitCommands(line string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	flushWord := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	flushCmd := func() {
		flushWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flushWord()
		case r == ';' || r == '|' || r == '&':
			flushCmd()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	flushCmd()
	return cmds
}

// codeSpans returns the `inline code` of a prose line.
func codeSpans(l string) []string {
	var spans []string
	for {
		i := strings.Index(l, "`")
		if i < 0 {
			return spans
		}
		j := strings.Index(l[i+1:], "`")
		if j < 0 {
			return spans
		}
		spans = append(spans, l[i+1:i+1+j])
		l = l[i+1+j+1:]
	}
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// links returns the targets of the Markdown links of a prose line.
func links(l string) []string {
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
		out = append(out, m[1])
	}
	return out
}
