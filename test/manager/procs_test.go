package manager_test

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// proc is one program under test (see testenv.Process).
type proc = testenv.Process

// start starts bin with args; the test's cleanup kills its process group.
func start(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	return testenv.StartProcess(t, name, bin, args...)
}

// eventually polls cond every 100ms until it holds, fails the test after
// bound, and returns how long it took.
func eventually(t *testing.T, bound time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	began := time.Now()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, bound, true,
		func(context.Context) (bool, error) {
			ok, err := cond()
			last = err
			return ok, nil
		})
	if err != nil {
		t.Fatalf("waiting %s for %s: %v (last error: %v)", bound, what, err, last)
	}
	return time.Since(began)
}

// metric returns the value of the sample of name whose labels include
// every label given ("k=\"v\"" pairs), from a Prometheus text exposition.
func metric(exposition, name string, labels ...string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(exposition))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		matched := true
		for _, l := range labels {
			matched = matched && strings.Contains(line, l)
		}
		if !matched {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			return v, true
		}
	}
	return 0, false
}

// label formats one label matcher for metric.
func label(k, v string) string { return fmt.Sprintf("%s=%q", k, v) }
