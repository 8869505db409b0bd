package testenv

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/localcluster"
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

// ProcessesUsing is localcluster.ProcessesUsing, failing the test if it
// cannot look.
func ProcessesUsing(t testing.TB, dir string) []string {
	t.Helper()
	found, err := localcluster.ProcessesUsing(dir)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// Pids lists the processes whose command line (its words each ended by a
// NUL, as /proc shows it) match accepts.
func Pids(match func(cmdline []byte) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && match(cmd) {
			out = append(out, pid)
		}
	}
	return out
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
