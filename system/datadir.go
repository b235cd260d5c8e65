package system

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MaxNodeIDLen is the longest node id.
const MaxNodeIDLen = 64

// maxHostPart bounds the part of a derived node id taken from the host
// name, leaving room for the suffix.
const maxHostPart = 40

// ValidNodeID returns nil when id is a valid node id: 1 to MaxNodeIDLen
// ASCII letters, digits, '-' and '_', starting with a letter or digit (an
// id starting with '-' would read as a flag on the command line). It
// returns an error wrapping ErrConfig otherwise.
func ValidNodeID(id string) error {
	if id == "" || len(id) > MaxNodeIDLen {
		return fmt.Errorf("%w: node id %q: want 1 to %d characters", ErrConfig, id, MaxNodeIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_') {
			return fmt.Errorf("%w: node id %q: want letters, digits, '-' and '_', starting with a letter or digit", ErrConfig, id)
		}
	}
	return nil
}

// NodeIDFromHostname derives a valid node id from any host name and a
// suffix of letters and digits: the host name in lower case, each run of
// other characters (dots, say) turned into one '-', trimmed of '-' at both
// ends and cut to 40 bytes — "node" when nothing is left — then '-' and
// the suffix. "ip-10-0-0-1.ec2.internal" and suffix "x7k2" give
// "ip-10-0-0-1-ec2-internal-x7k2".
func NodeIDFromHostname(host, suffix string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(host) {
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
			if b.Len() >= maxHostPart {
				break
			}
			continue
		}
		dash = true
	}
	h := strings.TrimRight(b.String(), "-")
	if h == "" {
		h = "node"
	}
	return h + "-" + suffix
}

// nodeIDSuffix returns 6 random lower-case letters and digits.
func nodeIDSuffix() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	raw := make([]byte, 6)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	for i, c := range raw {
		raw[i] = alphabet[int(c)%len(alphabet)]
	}
	return string(raw), nil
}

// nodeID returns the node id kept in dir, or derives one from the host
// name and keeps it there. An id in the file that is not valid is an
// error: the operator edited it, and replacing it would orphan its rooms.
func nodeID(dir string) (string, error) {
	path := filepath.Join(dir, NodeIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if err := ValidNodeID(id); err != nil {
			return "", fmt.Errorf("system: node id in %s: %w", path, err)
		}
		return id, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("system: read node id: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	suffix, err := nodeIDSuffix()
	if err != nil {
		return "", fmt.Errorf("system: node id: %w", err)
	}
	id := NodeIDFromHostname(host, suffix)
	if err := writeFileAtomic(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("system: keep node id: %w", err)
	}
	return id, nil
}

// serverKey returns the server key kept in dir, or generates one and
// keeps it there.
func serverKey(dir string) (string, error) {
	path := filepath.Join(dir, ServerKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		if k := strings.TrimSpace(string(b)); k != "" {
			return k, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("system: read server key: %w", err)
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("system: generate server key: %w", err)
	}
	key := "sk_" + base64.RawURLEncoding.EncodeToString(raw)
	if err := writeFileAtomic(path, []byte(key+"\n")); err != nil {
		return "", fmt.Errorf("system: keep server key: %w", err)
	}
	return key, nil
}

// writeFileAtomic writes data to a temporary file next to path, mode
// 0600, and renames it to path.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}
