//go:build unix

package system

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dirLock is an exclusive flock(2) on DIR/lock, held until release. The
// kernel drops it when the process dies, so a crash leaves no stale lock.
type dirLock struct {
	f *os.File
}

// lockDir takes the lock of dir and writes this process's pid into the
// lock file. When another process holds it, it returns a *LockedError
// with that process's pid.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("system: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := os.ReadFile(path)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return nil, &LockedError{Dir: dir, Lock: path, PID: pid}
		}
		return nil, fmt.Errorf("system: lock %s: %w", path, err)
	}
	// The pid is for the message of the next process only; failing to
	// write it does not weaken the lock.
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// release unlocks. The file stays, so that the next owner locks the same
// inode.
func (l *dirLock) release() error {
	_ = l.f.Truncate(0) // best effort: a stale pid in an unlocked file is harmless
	return l.f.Close()  // closing drops the flock
}
