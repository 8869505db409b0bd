package localcluster

import (
	"context"
	"fmt"
	"slices"
)

// StartProcess runs another program next to the cluster — Millwright's own
// processes, in the demo and the end-to-end tests — under the same care as
// the components: its own process group, killed if this process dies, its
// output in LogPath(name). Stop stops such processes first, newest first;
// StopProcess stops one earlier. ctx is not the process's lifetime; it
// only bounds the start.
func (c *Cluster) StartProcess(ctx context.Context, name, path string, args ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, taken := c.components[name]; taken || c.procs[name] != nil {
		return fmt.Errorf("localcluster: a component or process named %q already exists", name)
	}
	p, err := startProcess(name, path, args, nil, c.LogPath(name))
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	c.procs[name] = p
	c.extras = append(c.extras, name)
	return nil
}

// StopProcess stops a process StartProcess started (SIGTERM, then SIGKILL
// after Options.StopGracePeriod). Its name may then be used again.
func (c *Cluster) StopProcess(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.extras, name)
	if i < 0 {
		return fmt.Errorf("localcluster: no process %q was started with StartProcess", name)
	}
	c.extras = slices.Delete(c.extras, i, i+1)
	return c.stopLocked(name)
}

// stopExtrasLocked stops the processes StartProcess started, newest first.
func (c *Cluster) stopExtrasLocked() []error {
	var errs []error
	for _, name := range slices.Backward(c.extras) {
		if err := c.stopLocked(name); err != nil {
			errs = append(errs, err)
		}
	}
	c.extras = nil
	return errs
}

// ProcessExited reports whether a process StartProcess started has exited,
// and how — for a caller that wants to notice a crash while it waits.
func (c *Cluster) ProcessExited(name string) (bool, error) {
	c.mu.Lock()
	p := c.procs[name]
	c.mu.Unlock()
	if p == nil {
		return true, fmt.Errorf("localcluster: no running process %q", name)
	}
	return p.exited()
}
