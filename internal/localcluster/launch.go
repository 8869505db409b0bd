package localcluster

import "time"

// Process is a program started by StartProcess: the same launcher the
// cluster's components use, for helpers outside this package that run
// daemons of their own (such as internal/libvirtd).
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

// Stop sends SIGTERM to the process group, SIGKILL after grace, and
// returns once the process has been reaped.
func (p *Process) Stop(grace time.Duration) error { return p.p.stop(grace) }

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string { return logTail(p.p.log, n) }
