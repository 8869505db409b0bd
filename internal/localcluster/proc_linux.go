package localcluster

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// startCmd starts cmd in a process group of its own, with SIGKILL as its
// parent-death signal.
//
// The kernel sends the parent-death signal when the *thread* that forked
// the child exits, not the process. Go ends an OS thread when a goroutine
// locked to it returns, so a child started from an arbitrary goroutine
// could be killed long before its parent dies. Every child is therefore
// forked from one goroutine locked to its thread for the life of the
// process: that thread ends only when the process does.
func startCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	spawnerOnce.Do(func() {
		spawnRequests = make(chan spawnRequest)
		go spawner()
	})
	errc := make(chan error, 1)
	spawnRequests <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

var (
	spawnerOnce   sync.Once
	spawnRequests chan spawnRequest
)

func spawner() {
	runtime.LockOSThread() // never unlocked: see startCmd
	for r := range spawnRequests {
		r.errc <- r.cmd.Start()
	}
}
