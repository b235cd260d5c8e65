package httpapi

import (
	"bytes"
	"encoding/json"
	"time"
)

// ValidUsername: 1–MaxUsernameLen of [A-Za-z0-9_.-].
func ValidUsername(s string) bool {
	return len(s) >= 1 && len(s) <= MaxUsernameLen && allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' })
}

// ValidRoomID: 1–MaxRoomIDLen of [A-Za-z0-9_-].
func ValidRoomID(s string) bool {
	return len(s) >= 1 && len(s) <= MaxRoomIDLen && allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' })
}

// ValidRegion: 1–MaxRegionLen of [A-Za-z0-9_.-].
func ValidRegion(s string) bool {
	return len(s) >= 1 && len(s) <= MaxRegionLen && allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' })
}

// ValidClientSessionID: MinClientSessionIDLen–MaxClientSessionIDLen
// visible ASCII (0x21–0x7E), as the seed says.
func ValidClientSessionID(s string) bool {
	return len(s) >= MinClientSessionIDLen && len(s) <= MaxClientSessionIDLen && allBytes(s, func(c byte) bool { return c >= 0x21 && c <= 0x7e })
}

// ValidReason: 1–max printable ASCII (0x20–0x7E).
func ValidReason(s string, max int) bool {
	return len(s) >= 1 && len(s) <= max && allBytes(s, func(c byte) bool { return c >= 0x20 && c <= 0x7e })
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// IsNull reports whether raw is absent or JSON null.
func IsNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// CompactJSON returns raw without insignificant space, or an error for
// malformed JSON (which the decoder has already ruled out).
func CompactJSON(raw json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TTLSeconds resolves an optional ttl_seconds field: nil means def; else
// 1..max seconds.
func TTLSeconds(field string, v *int64, def, max time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	maxS := int64(max / time.Second)
	if *v < 1 || *v > maxS {
		return 0, Invalid("%s must be between 1 and %d", field, maxS)
	}
	return time.Duration(*v) * time.Second, nil
}

// TimeJSON formats t as RFC 3339 with milliseconds in UTC, the form of
// every timestamp of the API ("2026-11-10T08:01:00.000Z").
func TimeJSON(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
