package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint   string
		zeroPortOK bool
		want       string // "" for accepted, else a substring of the error
	}{
		{"unix:///run/sim.sock", false, ""},
		{"tcp://127.0.0.1:9000", false, ""},
		{"tcp://:9000", false, ""},
		{"tcp://127.0.0.1:0", true, ""},
		{"tcp://127.0.0.1:0", false, `port "0" is not a number from 1 to 65535`},
		{"", false, "empty endpoint"},
		{"unix://", false, "the socket path must be absolute"},
		{"unix://run/sim.sock", false, "the socket path must be absolute"},
		{"tcp://localhost", false, "missing port in address"},
		{"tcp://localhost:http", false, `port "http" is not a number`},
		{"127.0.0.1:9000", false, "want unix:///absolute/path.sock or tcp://host:port"},
		{"dns:///x:1", false, "want unix:///absolute/path.sock or tcp://host:port"},
	} {
		err := CheckEndpoint(tc.endpoint, tc.zeroPortOK)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q refused: %v", tc.endpoint, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one containing %q", tc.endpoint, err, tc.want)
		}
	}
}

func TestCheckListenAddress(t *testing.T) {
	for _, tc := range []struct {
		addr         string
		zeroDisables bool
		ok           bool
	}{
		{"", false, true},
		{"0", true, true},
		{"0", false, false},
		{":8080", false, true},
		{"127.0.0.1:0", false, true},
		{"8080", false, false},
		{"localhost:x", false, false},
	} {
		if err := CheckListenAddress(tc.addr, tc.zeroDisables); (err == nil) != tc.ok {
			t.Errorf("CheckListenAddress(%q, %v) = %v; want ok=%v", tc.addr, tc.zeroDisables, err, tc.ok)
		}
	}
}

func TestExitCode(t *testing.T) {
	usage := &UsageError{Err: errors.New("bad flag")}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("failed"), 1},
		{usage, 2},
		{fmt.Errorf("wrapped: %w", usage), 2},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
