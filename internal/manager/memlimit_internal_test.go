package manager

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// cgroupFiles writes a cgroup v2 and a v1 limit file (empty content: the
// file does not exist) and returns them in the order the manager reads.
func cgroupFiles(t *testing.T, v2, v1 string) []string {
	t.Helper()
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "memory.max"), filepath.Join(dir, "memory.limit_in_bytes")}
	for i, content := range []string{v2, v1} {
		if content != "" {
			if err := os.WriteFile(files[i], []byte(content+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return files
}

func TestResolveMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name, flag, env, v2, v1 string
		want                    int64
		wantFromEnv             bool
		source                  string
	}{
		{name: "quantity", flag: "100Mi", v2: "1073741824", want: 100 << 20, source: "--memory-limit=100Mi"},
		{name: "none ignores the container", flag: "none", v2: "1073741824", env: "50MiB", source: "--memory-limit=none"},
		{name: "auto: 90% of cgroup v2", flag: "auto", v2: "1073741824", want: 966367641, source: "90% of the container's 1073741824 bytes"},
		{name: "auto: v2 without a limit", flag: "auto", v2: "max", source: "no container memory limit"},
		{name: "auto: cgroup v1", flag: "auto", v1: "536870912", want: 483183820, source: "memory.limit_in_bytes"},
		{name: "auto: cgroup v1 without a limit", flag: "auto", v1: "9223372036854771712", source: "no container memory limit"},
		{name: "auto: no cgroup", flag: "auto", source: "no container memory limit"},
		{name: "auto: GOMEMLIMIT wins", flag: "auto", env: "80MiB", v2: "1073741824", wantFromEnv: true, source: "GOMEMLIMIT=80MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveMemoryLimit(tc.flag, tc.env, cgroupFiles(t, tc.v2, tc.v1))
			if err != nil {
				t.Fatal(err)
			}
			if got.fromEnv != tc.wantFromEnv || (!tc.wantFromEnv && got.bytes != tc.want) {
				t.Errorf("got %d bytes (from the environment: %v), want %d (%v)", got.bytes, got.fromEnv, tc.want, tc.wantFromEnv)
			}
			if !strings.Contains(got.source, tc.source) {
				t.Errorf("source %q does not contain %q", got.source, tc.source)
			}
		})
	}
}

// A cgroup file that holds no number is an error that names it, not a
// limit of zero bytes.
func TestResolveMemoryLimitUnreadableCgroup(t *testing.T) {
	files := cgroupFiles(t, "lots", "")
	got, err := resolveMemoryLimit(MemoryLimitAuto, "", files)
	if err == nil || !strings.Contains(err.Error(), files[0]) {
		t.Fatalf("error %v, want one naming %s", err, files[0])
	}
	if got.bytes != 0 {
		t.Errorf("limit %d after an error, want none", got.bytes)
	}
}

// apply sets the runtime's limit, and none lifts one.
func TestMemoryLimitApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	memoryLimit{bytes: 123 << 20}.apply()
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Errorf("limit %d after applying 123Mi", got)
	}
	memoryLimit{}.apply()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d after applying none, want none (MaxInt64)", got)
	}
	debug.SetMemoryLimit(77 << 20)
	memoryLimit{fromEnv: true, source: "GOMEMLIMIT=77MiB"}.apply()
	if got := debug.SetMemoryLimit(-1); got != 77<<20 {
		t.Errorf("limit %d: GOMEMLIMIT's was changed", got)
	}
}
