package libvirtd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// usersDir records, one file per process id, the processes using daemons
// that Ensure started. A daemon lives as long as the process that started
// it (the launcher kills its children with it), so that process's Stop
// waits until every other user is done: `go test ./...` runs several
// packages needing libvirtd at once, and the first to finish must not pull
// libvirtd from under the others.
var usersDir = "/run/millwright/libvirtd-users"

// lockFile serializes Ensure's and Stop's decisions across processes.
var lockFile = "/run/millwright/libvirtd.lock"

// withLock runs f holding the cross-process lock.
func withLock(f func() error) error {
	if err := os.MkdirAll(filepath.Dir(lockFile), 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lockFile, err)
	}
	defer func() { _ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) }()
	return f()
}

func userFile(pid int) string { return filepath.Join(usersDir, strconv.Itoa(pid)) }

// register records this process as a user of the daemons.
func register() error {
	if err := os.MkdirAll(usersDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(userFile(os.Getpid()), nil, 0o644)
}

// unregister removes this process's record.
func unregister() {
	if err := os.Remove(userFile(os.Getpid())); err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "libvirtd:", err)
	}
}

// otherUsers counts the live processes other than this one that use the
// daemons, removing the records of processes that are gone.
func otherUsers() int {
	entries, err := os.ReadDir(usersDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.Remove(userFile(pid))
			continue
		}
		n++
	}
	return n
}
