package manager

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The --memory-limit values that are not a quantity.
const (
	// MemoryLimitAuto takes the soft limit from the container's memory
	// limit (its cgroup), unless GOMEMLIMIT is set.
	MemoryLimitAuto = "auto"
	// MemoryLimitNone sets no soft limit: the collector runs at GOGC alone.
	MemoryLimitNone = "none"
)

// autoMemoryShare is the share of the container's memory limit that auto
// gives the Go heap and runtime: the rest is for what the runtime does not
// count (the binary's text, C allocations, the kernel's page cache charged
// to the container), so the collector works harder before the kernel
// kills the process, not after.
const autoMemoryShare = 0.9

// cgroupMemoryFiles are where a process reads its container's memory
// limit: cgroup v2's memory.max (the container's own cgroup, mounted at
// the root in its cgroup namespace), then cgroup v1's limit_in_bytes.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimit is what --memory-limit resolves to: the soft limit in bytes
// (0: none) and where it came from, for the start-up log. fromEnv: the
// runtime already applied GOMEMLIMIT, and it stays.
type memoryLimit struct {
	bytes   int64
	source  string
	fromEnv bool
}

// parseMemoryLimit checks a --memory-limit value without reading the
// environment: auto, none, or a positive quantity such as 100Mi.
func parseMemoryLimit(v string) (int64, error) {
	switch v {
	case MemoryLimitAuto, MemoryLimitNone:
		return 0, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("%q is not %s, %s or a positive quantity such as 100Mi", v, MemoryLimitAuto, MemoryLimitNone)
	}
	return q.Value(), nil
}

// resolveMemoryLimit works out the soft limit v asks for. auto leaves a
// GOMEMLIMIT of the environment to the runtime (which already applied
// it), else takes autoMemoryShare of the cgroup's limit, else none; any
// other value is what parseMemoryLimit makes of it.
func resolveMemoryLimit(v, gomemlimit string, files []string) (memoryLimit, error) {
	if v != MemoryLimitAuto {
		b, err := parseMemoryLimit(v)
		return memoryLimit{bytes: b, source: "--memory-limit=" + v}, err
	}
	if gomemlimit != "" {
		return memoryLimit{bytes: debug.SetMemoryLimit(-1), source: "GOMEMLIMIT=" + gomemlimit, fromEnv: true}, nil
	}
	limit, file, err := cgroupMemoryLimit(files)
	if err != nil || limit == 0 {
		return memoryLimit{source: "no container memory limit found"}, err
	}
	return memoryLimit{bytes: int64(float64(limit) * autoMemoryShare),
		source: fmt.Sprintf("%.0f%% of the container's %d bytes (%s)", autoMemoryShare*100, limit, file)}, nil
}

// cgroupMemoryLimit reads the first of files that exists: its limit in
// bytes, 0 when it says there is none ("max", or cgroup v1's page-rounded
// maximum).
func cgroupMemoryLimit(files []string) (int64, string, error) {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, f, err
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, f, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, f, fmt.Errorf("%s: %q is not a number of bytes", f, s)
		}
		if n >= math.MaxInt64/2 { // cgroup v1 says "no limit" with a huge number
			return 0, f, nil
		}
		return n, f, nil
	}
	return 0, "", nil
}

// apply sets the runtime's soft memory limit; none lifts one the
// environment set.
func (m memoryLimit) apply() {
	switch {
	case m.fromEnv:
	case m.bytes > 0:
		debug.SetMemoryLimit(m.bytes)
	default:
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
