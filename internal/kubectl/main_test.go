package kubectl_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/kubectl"
)

// update rewrites the golden files from the output instead of checking it.
var update = flag.Bool("update", false, "rewrite testdata/*.golden from the output")

// The tests run the command against a real API server with the CRDs
// installed; those whose verb needs the controllers to act start them
// with a controllertest.Harness.
func TestMain(m *testing.M) { os.Exit(controllertest.Run(m)) }

// cli runs the command as a user would: kubeconfig, namespace and args.
type cli struct {
	t          *testing.T
	kubeconfig string
	ns         string
	// now is the clock of the command; zero means the real one.
	now time.Time
}

func newCLI(t *testing.T, ns string) *cli {
	t.Helper()
	kc, err := controllertest.Env.WriteKubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &cli{t: t, kubeconfig: kc, ns: ns}
}

// run runs the command with args and returns its output and error.
func (c *cli) run(ctx context.Context, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	o := &kubectl.Options{
		ConfigFlags: genericclioptions.NewConfigFlags(false),
		IOStreams:   genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
	}
	if !c.now.IsZero() {
		o.Now = func() time.Time { return c.now }
	}
	cmd := kubectl.NewCommand("kubectl-millwright", o)
	cmd.SetArgs(append([]string{"--kubeconfig", c.kubeconfig, "-n", c.ns}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// ok runs the command and fails the test if it fails.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(context.Background(), args...)
	if err != nil {
		c.t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errOut)
	}
	return out
}

// fails runs the command, which must fail with an error containing want.
func (c *cli) fails(want string, args ...string) {
	c.t.Helper()
	out, _, err := c.run(context.Background(), args...)
	if err == nil || !strings.Contains(err.Error(), want) {
		c.t.Fatalf("%v: want an error containing %q, got %v\nstdout:\n%s", args, want, err, out)
	}
}

// timestamps are absolute times in the output: the API server sets the
// creation times, so golden files hold them as 0000-00-00T00:00:00Z
// (the same width: the columns stay aligned).
var timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// golden compares out with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, out string) {
	t.Helper()
	out = timestamps.ReplaceAllString(out, "0000-00-00T00:00:00Z")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != out {
		t.Errorf("output differs from %s (run with -update if the change is meant):\n--- got\n%s\n--- want\n%s", path, out, want)
	}
}
