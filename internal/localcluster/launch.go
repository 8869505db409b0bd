package localcluster

import (
	"syscall"
	"time"
)

// Process is a program started by StartProcess: the same launcher the
// cluster's components use, for helpers outside this package that run
// processes of their own (internal/libvirtd's daemons, internal/testenv's
// programs under test).
type Process struct{ p *process }

// StartProcess starts the binary at path in a process group of its own,
// killed if this process dies, with stdout and stderr appended to log.
func StartProcess(name, path string, args, env []string, log string) (*Process, error) {
	p, err := startProcess(name, path, args, env, log)
	if err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// Pid is the process's id, which is also its process group's id.
func (p *Process) Pid() int { return p.p.pid() }

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) { return p.p.exited() }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.p.done }

// ExitCode is the process's exit code once Done is closed (-1 for a death
// by signal, or while it runs).
func (p *Process) ExitCode() int {
	select {
	case <-p.p.done:
		return p.p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Signal sends sig to the process alone, not to its group.
func (p *Process) Signal(sig syscall.Signal) error { return p.p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM to the process group, SIGKILL after grace, and
// returns once the process has been reaped.
func (p *Process) Stop(grace time.Duration) error { return p.p.stop(grace) }

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string { return logTail(p.p.log, n) }
