package api

import (
	"fmt"
	"time"
)

// TimeLayout is the form of every timestamp of the APIs: RFC 3339 in UTC
// with milliseconds, "2026-11-10T08:01:00.000Z".
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Time is a timestamp of the APIs. It encodes as [TimeLayout] and decodes
// any RFC 3339 time. The zero Time encodes as null, and null decodes as
// the zero Time.
type Time struct{ time.Time }

// NewTime returns t as a Time.
func NewTime(t time.Time) Time { return Time{t} }

// MarshalJSON encodes t as [TimeLayout] in UTC.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(TimeLayout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON decodes an RFC 3339 string or null.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Time{}
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("api: timestamp %.40s is not a JSON string", b)
	}
	v, err := time.Parse(time.RFC3339, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("api: timestamp: %w", err)
	}
	t.Time = v
	return nil
}
