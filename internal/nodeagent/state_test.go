package nodeagent

import (
	"os"
	"path/filepath"
	"reflect"
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

func TestStateRecord(t *testing.T) {
	dev := stateDevice(t)
	if s, err := ReadState(dev); s != nil || err != nil {
		t.Fatalf("a zeroed device holds %+v, %v; want no state", s, err)
	}
	first := &State{NodeName: "m-1", Certificate: []byte("cert\n"), Key: []byte("key\n"), Version: "v1.35.2"}
	if err := WriteState(dev, first); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadState(dev); err != nil || !reflect.DeepEqual(got, first) {
		t.Fatalf("ReadState = %+v, %v; want %+v", got, err, first)
	}
	// A shorter record over a longer one: the length says where it ends.
	second := &State{NodeName: "m-1", Version: "v1.36.0"}
	if err := WriteState(dev, second); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadState(dev); err != nil || !reflect.DeepEqual(got, second) {
		t.Fatalf("ReadState after a second write = %+v, %v; want %+v", got, err, second)
	}
	if fi, err := os.Stat(dev); err != nil || fi.Size() != 1<<20 {
		t.Errorf("the device's size changed: %v, %v", fi.Size(), err)
	}

	// A flipped bit in the JSON fails the checksum: an error, not "no state".
	data, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	data[14] ^= 1
	corrupt := filepath.Join(t.TempDir(), "corrupt")
	if err := os.WriteFile(corrupt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := ReadState(corrupt); s != nil || err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("ReadState of a corrupt record = %+v, %v; want a checksum error", s, err)
	}
	// A length beyond the bound is refused before reading.
	data[14] ^= 1
	copy(data[8:12], []byte{0xff, 0xff, 0xff, 0xff})
	if err := os.WriteFile(corrupt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := ReadState(corrupt); s != nil || err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("ReadState of an oversized length = %+v, %v; want an error", s, err)
	}
	// WriteState creates nothing: the device is the provider's.
	if err := WriteState(filepath.Join(t.TempDir(), "missing"), first); err == nil {
		t.Error("WriteState created a missing device")
	}
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
