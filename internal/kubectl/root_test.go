package kubectl_test

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/millwright-dev/millwright/internal/kubectl"
)

// TestNames: run as the plugin, the help says "kubectl millwright" but the
// completion script completes the program itself, never kubectl; under
// another name the command is that name.
func TestNames(t *testing.T) {
	for _, tc := range []struct{ program, help, completes string }{
		{"/usr/local/bin/kubectl-millwright", "kubectl millwright [command]", "__start_kubectl-millwright"},
		{"millwright", "millwright [command]", "__start_millwright"},
	} {
		run := func(args ...string) string {
			var out bytes.Buffer
			cmd := kubectl.NewCommand(tc.program, &kubectl.Options{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}})
			cmd.SetArgs(args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			return out.String()
		}
		if help := run("--help"); !strings.Contains(help, "Usage:\n  "+tc.help) {
			t.Errorf("%s --help:\n%s", tc.program, help)
		}
		script := run("completion", "bash")
		if !strings.Contains(script, tc.completes) || strings.Contains(script, "__start_kubectl ") {
			t.Errorf("%s completion bash does not complete %s alone:\n%.300s", tc.program, tc.completes, script)
		}
	}
}
