//go:build unix

package system

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/internal/certs"
)

// warnLooseModes logs a warning for the data dir and each secret kept in
// it (the NATS nkey, the server key, the generated TLS key) that users
// other than the owner may read or write. System creates them 0700 and
// 0600, but a directory the operator made beforehand, or a file copied or
// restored, keeps its own mode, and whoever reads the nkey controls the
// deployment (docs/security.md). It warns rather than refuses, as a
// mounted secret may be 0644 on purpose.
func warnLooseModes(log *slog.Logger, dir string) {
	for _, name := range []string{".", backbone.CredentialsFileName, ServerKeyFile, certs.DefaultKeyFile} {
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				log.Warn("cannot check the mode of a data dir file", "path", path, "err", err)
			}
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			want := "0600"
			if fi.IsDir() {
				want = "0700"
			}
			log.Warn("data dir secret is open to other users; chmod it "+want, "path", path, "mode", fi.Mode().Perm().String())
		}
	}
}
