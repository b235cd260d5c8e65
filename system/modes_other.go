//go:build !unix

package system

import "log/slog"

// warnLooseModes does nothing where Unix permission bits do not apply.
func warnLooseModes(*slog.Logger, string) {}
