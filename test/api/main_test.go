// Package api_test checks the CRDs against a real kube-apiserver: samples
// accepted, bad objects refused with clear messages, defaults, /scale, and
// that generated files are current.
package api_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/millwright-dev/millwright/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping control plane:", err)
	}
	os.Exit(code)
}
