package httpapi

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// ValidUsername reports whether s is 1–api.MaxUsernameLen of [A-Za-z0-9_.-].
func ValidUsername(s string) bool {
	return len(s) >= 1 && len(s) <= api.MaxUsernameLen && allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' })
}

// ValidRoomID reports whether s is 1–api.MaxRoomIDLen of [A-Za-z0-9_-].
func ValidRoomID(s string) bool {
	return len(s) >= 1 && len(s) <= api.MaxRoomIDLen && allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' })
}

// ValidRegion reports whether s is 1–api.MaxRegionLen of [A-Za-z0-9_.-].
func ValidRegion(s string) bool {
	return len(s) >= 1 && len(s) <= api.MaxRegionLen && allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' })
}

// ValidClientSessionID reports whether s is
// api.MinClientSessionIDLen–api.MaxClientSessionIDLen visible ASCII
// (0x21–0x7E), as the seed says.
func ValidClientSessionID(s string) bool {
	return len(s) >= api.MinClientSessionIDLen && len(s) <= api.MaxClientSessionIDLen && allBytes(s, func(c byte) bool { return c >= 0x21 && c <= 0x7e })
}

// ValidReason reports whether s is 1–max printable ASCII (0x20–0x7E).
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
