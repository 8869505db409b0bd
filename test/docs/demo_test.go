package docs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/millwright-dev/millwright/internal/demo"
)

// runtimeTools are the programs of the repository's bin/ (built by `make
// runtime-tools`, which `make demo` runs first) that the demo starts and
// the docs' commands call.
var runtimeTools = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl"}

// demoEnv is what a reader has once `make demo` says "Everything is
// Running": the demo's cluster and fleet, the KUBECONFIG it prints, and a
// bin/ on PATH with kubectl and kubectl-millwright.
type demoEnv struct {
	kubeconfig string
	// simAdmin is the sim's admin API the demo prints, through which a
	// fixture fails a Node behind Millwright's back.
	simAdmin string
	bin      string   // the reader's bin/: runtime tools and the programs of cmd/
	env      []string // the environment the docs' commands run in
	out      *syncBuffer

	stop context.CancelFunc
	done chan error
}

var (
	demoOnce sync.Once
	theDemo  *demoEnv
	demoErr  error
)

// startDemo starts the demo once for the package (the runner and its
// self-check share it); TestMain stops it.
func startDemo() (*demoEnv, error) {
	demoOnce.Do(func() { theDemo, demoErr = launchDemo() })
	return theDemo, demoErr
}

var (
	kubeconfigRE = regexp.MustCompile(`export KUBECONFIG=(\S+)`)
	simAdminRE   = regexp.MustCompile(`curl -s (http://\S+)/vms \| head`)
)

func launchDemo() (*demoEnv, error) {
	dir, err := os.MkdirTemp("", "docs-demo-")
	if err != nil {
		return nil, err
	}
	// The reader's bin/: the runtime tools of the repository's bin/ and
	// the programs TestMain built from this tree (the repository's bin/
	// may hold older builds of those, or none).
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return nil, err
	}
	for _, tool := range runtimeTools {
		src := filepath.Join(check.root, "bin", tool)
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("%s is missing: `make runtime-tools` builds it (make test does)", src)
		}
		if err := os.Symlink(src, filepath.Join(bin, tool)); err != nil {
			return nil, err
		}
	}
	progs, err := os.ReadDir(check.bin)
	if err != nil {
		return nil, err
	}
	for _, p := range progs {
		if err := os.Symlink(filepath.Join(check.bin, p.Name()), filepath.Join(bin, p.Name())); err != nil {
			return nil, err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	d := &demoEnv{bin: bin, out: &syncBuffer{up: make(chan struct{})}, stop: cancel, done: make(chan error, 1)}
	go func() {
		d.done <- demo.Run(ctx, demo.Options{Root: check.root, Bin: bin, Dir: filepath.Join(dir, "cluster"),
			Timeout: 5 * time.Minute, Out: d.out})
	}()
	select {
	case <-d.out.up:
	case err := <-d.done:
		cancel()
		return nil, fmt.Errorf("the demo stopped before its fleet was up: %v\n%s", err, d.out.String())
	}
	m := kubeconfigRE.FindStringSubmatch(d.out.String())
	if m == nil {
		d.shutdown()
		return nil, errors.New("the demo did not print `export KUBECONFIG=...`:\n" + d.out.String())
	}
	d.kubeconfig = m[1]
	a := simAdminRE.FindStringSubmatch(d.out.String())
	if a == nil {
		d.shutdown()
		return nil, errors.New("the demo did not print the sim's admin API (`curl -s http://.../vms`):\n" + d.out.String())
	}
	// As the docs tell the reader: KUBECONFIG from the demo, bin/ on PATH.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "PATH=") {
			d.env = append(d.env, kv)
		}
	}
	d.env = append(d.env, "KUBECONFIG="+d.kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	d.simAdmin = a[1]
	return d, nil
}

// shutdown stops the demo (its fleet, its processes) and waits for it.
func (d *demoEnv) shutdown() {
	d.stop()
	if err := <-d.done; err != nil {
		fmt.Fprintln(os.Stderr, "the demo:", err)
	}
	_ = os.RemoveAll(filepath.Dir(d.bin))
}

// syncBuffer keeps the demo's output; up is closed once the demo says its
// fleet is Running and has printed the commands to try next.
type syncBuffer struct {
	mu     sync.Mutex
	b      strings.Builder
	up     chan struct{}
	closed bool
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	if !s.closed && strings.Contains(s.b.String(), "Everything is Running.") && strings.Contains(s.b.String(), "Logs of every process are in") {
		s.closed = true
		close(s.up)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
