package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stateDevice is a zeroed file standing in for the provider's state
// volume (a new volume reads as zeroes).
func stateDevice(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRefuseVersion(t *testing.T) {
	const server = "v1.36.3"
	for _, tc := range []struct {
		v, want string // want: a part of the refusal, "" for accepted
	}{
		{"v1.36.3", ""},
		{"v1.36.9", ""}, // a newer patch: the policy counts minors
		{"v1.36.0-rc.1", ""},
		{"v1.33.0", ""},
		{"v1.37.0", "newer than the API server"},
		{"v1.32.9", "more than 3 minor versions older"},
		{"v2.36.0", "major"},
		{"1.36.3", "not a Kubernetes version"},
		{"v1.36", "not a Kubernetes version"},
		{"v1.36.3+build", "not a Kubernetes version"},
		{"v01.36.3", "not a Kubernetes version"},
		{"", "not a Kubernetes version"},
	} {
		got := refuseVersion(tc.v, server)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("refuseVersion(%q, %s) = %q, want %q", tc.v, server, got, tc.want)
		}
	}
	// The API server's own version may carry build metadata.
	if got := refuseVersion("v1.36.0", "v1.36.3+k3s1"); got != "" {
		t.Errorf("refuseVersion against v1.36.3+k3s1 = %q", got)
	}
}
