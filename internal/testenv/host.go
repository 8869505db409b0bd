package testenv

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ProcessesUsing lists the processes whose command line mentions dir, as
// every process a local cluster starts does (its flags name files there).
// This test binary and its re-executions are left out: a test that runs
// itself as the command under test would otherwise find itself.
func ProcessesUsing(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
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
	return found
}

// OfflineKubeconfig writes a kubeconfig for an API server that is not
// there, for tests of what a program does before, or without, reaching one.
func OfflineKubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// HTTPGet fetches url (5 s at most) and returns its status and body.
func HTTPGet(url string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
