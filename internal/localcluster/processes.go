package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessesUsing lists the processes whose command line mentions dir, as
// every process a local cluster starts does (its flags name files there),
// for checks that nothing was left running. This program and its
// re-executions are left out: a test that runs itself as the command under
// test would otherwise find itself.
func ProcessesUsing(dir string) ([]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // exited meanwhile
		}
		// A zombie's cmdline is empty.
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if strings.Contains(string(cmdline), dir) && args[0] != os.Args[0] {
			found = append(found, fmt.Sprintf("%d: %s", pid, strings.Join(args, " ")))
		}
	}
	return found, nil
}
