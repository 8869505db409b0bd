package manager_test

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// proc is one program under test (see testenv.Process).
type proc = testenv.Process

// start starts bin with args; the test's cleanup kills its process group.
func start(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	return testenv.StartProcess(t, name, bin, args...)
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
