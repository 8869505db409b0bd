//go:build unix && !linux

package localcluster

import (
	"os/exec"
	"syscall"
)

// startCmd starts cmd in a process group of its own. Without Linux's
// parent-death signal, children outlive a parent killed with SIGKILL.
func startCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}
