// Package api_test checks the CRDs against a real kube-apiserver: samples
// accepted, bad objects refused with clear messages, defaults, /scale, and
// that generated files are current.
package api_test

import (
	"os"
	"testing"

	"github.com/millwright-dev/millwright/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) error { env = e; return nil }))
}
