// Package motoserver runs moto's AWS API server (moto_server) for tests,
// and a proxy in front of it that answers chosen EC2 calls with EC2's own
// error responses (Proxy), for what moto cannot be made to return:
// capacity, quota and throttling errors (docs/providers/aws.md, "What
// was proven against moto").
package motoserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Program is moto's server, looked up on PATH.
const Program = "moto_server"

// InstallHint says how to get moto_server where it is missing.
const InstallHint = "pip install 'moto[server]' (moto 5.2.1 is what the tests were written against)"

const (
	// startBound bounds how long a start waits for moto to answer: its
	// Python imports take 2–3 s on an idle machine, much more on a busy one.
	startBound = 2 * time.Minute
	// startTries is how many ports a start tries: the free port found may be
	// taken by someone else before moto binds it.
	startTries = 3
)

// Server is a running moto_server on a loopback port.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT: the endpoint of
	// every AWS service it serves (EC2, STS, ...).
	URL string
	// Log is the file moto writes its output to.
	Log    string
	cmd    *exec.Cmd
	exited chan error // Wait's result; nil once stopped
}

// Start starts moto_server for the test and stops it when the test ends.
// It fails the test (never skips it) when moto_server is not on PATH: a
// test that cannot run must say so.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := start(t.TempDir(), os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping moto_server: %v", err)
		}
	})
	return s
}

// StartMain is Start for a TestMain: it returns the server and a function
// that stops it, or an error that says how to install moto.
func StartMain(dir string) (*Server, func(), error) {
	s, err := start(dir, os.Environ())
	if err != nil {
		return nil, nil, err
	}
	return s, func() { _ = s.Stop() }, nil
}

func start(dir string, env []string) (*Server, error) {
	bin, err := exec.LookPath(Program)
	if err != nil {
		return nil, fmt.Errorf("%s is not on PATH (%v): the AWS driver's tests run against it; %s", Program, err, InstallHint)
	}
	var last error
	for try := range startTries {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{URL: "http://127.0.0.1:" + port, Log: filepath.Join(dir, fmt.Sprintf("moto-%d.log", try))}
		if last = s.run(bin, port, env); last == nil {
			return s, nil
		}
	}
	return nil, last
}

// run starts moto on port and waits until it answers, or until it exits.
func (s *Server) run(bin, port string, env []string) error {
	log, err := os.Create(s.Log)
	if err != nil {
		return err
	}
	defer log.Close()
	s.cmd = exec.Command(bin, "-H", "127.0.0.1", "-p", port)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.Env = env
	// Its own process group: Stop ends moto and any worker it forked.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	deadline := time.Now().Add(startBound)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("%s exited before answering (%v); its log %s:\n%s", bin, err, s.Log, tail(s.Log))
		case <-time.After(100 * time.Millisecond):
		}
		if s.answers() {
			s.exited = exited
			return nil
		}
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	return fmt.Errorf("%s did not answer on %s within %s; its log %s:\n%s", bin, s.URL, startBound, s.Log, tail(s.Log))
}

// answers reports whether moto's own API answers.
func (s *Server) answers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/moto-api/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode < 500
}

// Reset clears every resource moto holds (instances, tags, ...), as a
// new server would have them.
func (s *Server) Reset() error {
	resp, err := http.Post(s.URL+"/moto-api/reset", "application/json", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("moto reset: %s", resp.Status)
	}
	return nil
}

// Stop ends moto and its process group and waits for it.
func (s *Server) Stop() error {
	if s.cmd == nil || s.cmd.Process == nil || s.exited == nil {
		return nil
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.exited = nil
	return nil
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
