package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/millwright-dev/millwright/internal/logtail"
)

// process is one running component: the child started by startProcess,
// with stdout and stderr appended to its log file.
type process struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // how it exited; set before done closes
}

// startProcess starts a component's binary. The log is appended to, so a
// restarted component's earlier output is kept.
func startProcess(name, path string, args, env []string, log string) (*process, error) {
	out, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	// A header per start, so a restarted component's runs can be told apart.
	if fi, err := out.Stat(); err == nil && fi.Size() > 0 {
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "=== localcluster: starting %s at %s\n", name, time.Now().Format(time.RFC3339))
	// Not exec.CommandContext: a component lives until it is stopped, not
	// until whichever context started it ends.
	cmd := exec.Command(path, args...)
	// An *os.File is handed to the child as is: no copying goroutine that
	// could block Wait or lose the last lines of a crash.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	err = startCmd(cmd)
	_ = out.Close() // the child holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, path, err)
	}
	p := &process{name: name, log: log, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid is the process's id, which is also its process group's id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL if the process has
// not exited after grace, and returns once it has been reaped. Signalling
// the group rather than the process also reaches anything it spawned.
func (p *process) stop(grace time.Duration) error {
	pgid := p.pid()
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s: %w", p.name, err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	var killed bool
	select {
	case <-p.done:
	case <-timer.C:
		killed = true
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// The leader is gone; anything left in its group was spawned by it and
	// would otherwise be orphaned. ESRCH (nothing left) is the usual case.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if killed {
		return fmt.Errorf("%s did not exit within %s of SIGTERM and was killed", p.name, grace)
	}
	return nil
}

// logTail returns the last n lines of a log file, for error messages.
func logTail(path string, n int) string { return logtail.Tail(path, n) }
