//go:build !unix

package system

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// dirLock is DIR/lock created exclusively, removed by release. Without
// flock(2) a crashed process leaves the file behind; the error names it so
// that the operator can remove it.
type dirLock struct {
	path string
}

func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		b, _ := os.ReadFile(path)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return nil, &LockedError{Dir: dir, Lock: path, PID: pid}
	}
	if err != nil {
		return nil, fmt.Errorf("system: create lock file: %w", err)
	}
	_, _ = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	return &dirLock{path: path}, f.Close()
}

func (l *dirLock) release() error { return os.Remove(l.path) }
