package system

import (
	"errors"
	"fmt"
)

// ErrConfig is returned (wrapped) by [Start] for a Config it cannot run:
// unknown roles, half a TLS key pair, an invalid node id.
var ErrConfig = errors.New("system: invalid config")

// ErrLocked is returned (wrapped in a [*LockedError]) by [Start] when
// another process owns the data directory.
var ErrLocked = errors.New("system: data dir in use")

// LockedError says which process owns a data directory. It matches
// ErrLocked with errors.Is.
type LockedError struct {
	// Dir is the data directory and Lock its lock file.
	Dir, Lock string
	// PID is the owner's process id, 0 when the lock file does not say.
	PID int
}

func (e *LockedError) Error() string {
	owner := "another process"
	if e.PID > 0 {
		owner = fmt.Sprintf("process %d", e.PID)
	}
	return fmt.Sprintf("system: data dir %s is in use by %s (lock file %s held); stop it or use another --data-dir", e.Dir, owner, e.Lock)
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }
